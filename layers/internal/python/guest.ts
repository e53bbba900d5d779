/** @internal */
import type { ChildProcess } from "node:child_process"
import { spawn } from "node:child_process"
import type { Readable, Writable } from "node:stream"

/** What the Python side reported about itself. @internal */
export type GuestKind = "exception" | "invalid-output" | "result-size" | "memory" | "stack" | "timeout"

const GUEST_KINDS: ReadonlySet<string> = new Set([
  "exception",
  "invalid-output",
  "result-size",
  "memory",
  "stack",
  "timeout"
])

/** Something the process did, in the order the host saw it. @internal */
export type GuestEvent =
  | { readonly _tag: "Call"; readonly id: number; readonly ns: number; readonly name: string; readonly args: unknown }
  | { readonly _tag: "Done"; readonly hasValue: boolean; readonly value: unknown }
  | { readonly _tag: "Failed"; readonly kind: GuestKind; readonly message: string | undefined }
  | { readonly _tag: "Broken"; readonly reason: string }
  | { readonly _tag: "TooLarge" }
  | { readonly _tag: "ConsoleFull" }
  | { readonly _tag: "SpawnFailed"; readonly reason: string }
  | { readonly _tag: "Closed"; readonly code: number | null; readonly signal: NodeJS.Signals | null }

/** @internal */
export interface GuestOptions {
  readonly argv: ReadonlyArray<string>
  readonly cwd: string
  readonly consoleBytes: number
  readonly messageBytes: number
  readonly onEvent: (event: GuestEvent) => void
  /**
   * Called once when the process is gone: it exited and every pipe it held is closed (so its
   * descendants holding them are gone too), or it exited and `GONE_GRACE_MS` passed.
   */
  readonly onGone: () => void
}

/** How long after the process exits the host waits for descendants still holding its pipes. */
const GONE_GRACE_MS = 2_000

/** One Python process, seen from the host. @internal */
export interface Guest {
  /** Writes one protocol line to the program (dropped once the pipe is gone). */
  readonly send: (line: string) => void
  /** Kills the process group (SIGKILL) unless the process already exited. */
  readonly kill: () => void
  /** Destroys the host's ends of the pipes. */
  readonly destroy: () => void
  /** The printed lines so far (the partial last line included); call once, at the end. */
  readonly takeLogs: () => Array<string>
  /** The last bytes the process wrote to its real stderr (before the runner redirected it). */
  readonly stderrTail: () => string
}

const broken = (reason: string): GuestEvent => ({ _tag: "Broken", reason })

const isIndex = (value: unknown, least: number): value is number =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= least

/** One protocol line from the runner, read as hostile input. @internal */
export const parse = (line: Buffer): GuestEvent => {
  let message: unknown
  try {
    message = JSON.parse(line.toString("utf8"))
  } catch {
    return broken("a line that is not JSON")
  }
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    return broken("a line that is not a message")
  }
  const fields = message as Record<string, unknown>
  switch (fields.t) {
    case "call": {
      const { args, id, name, ns } = fields
      if (!isIndex(id, 1) || !isIndex(ns, 0) || typeof name !== "string" || !Object.hasOwn(fields, "args")) {
        return broken("a malformed call")
      }
      return { _tag: "Call", id, ns, name, args }
    }
    case "done":
      return { _tag: "Done", hasValue: Object.hasOwn(fields, "value"), value: fields.value }
    case "error": {
      const { kind, message: text } = fields
      if (typeof kind !== "string" || !GUEST_KINDS.has(kind) || (text !== undefined && typeof text !== "string")) {
        return broken("a malformed error report")
      }
      return { _tag: "Failed", kind: kind as GuestKind, message: text }
    }
    default:
      return broken("an unknown message")
  }
}

const TAIL_BYTES = 4096

/**
 * Starts the process (in its own process group) and frames its traffic: protocol lines from
 * fd 4, printed lines from stdout (stderr is redirected there by the runner), bounded by
 * `consoleBytes` and `messageBytes`. Every listener is total: nothing the process sends can
 * throw into the host.
 *
 * @internal
 */
export const spawnGuest = (options: GuestOptions): Guest => {
  const { consoleBytes, messageBytes, onEvent } = options
  const logs: Array<string> = []
  const decoder = new TextDecoder("utf-8")
  let partial = ""
  let consoleUsed = 0
  let consoleFull = false
  let tail = ""
  let frame: Array<Buffer> = []
  let frameBytes = 0
  let protocolDone = false
  let exited = false
  let goneReported = false
  let grace: ReturnType<typeof setTimeout> | undefined
  const reportGone = () => {
    if (goneReported) return
    goneReported = true
    if (grace !== undefined) clearTimeout(grace)
    options.onGone()
  }

  let child: ChildProcess
  try {
    child = spawn(options.argv[0]!, options.argv.slice(1), {
      cwd: options.cwd,
      env: {},
      stdio: ["ignore", "pipe", "pipe", "pipe", "pipe"],
      detached: true
    })
  } catch {
    onEvent({ _tag: "SpawnFailed", reason: "the Python process could not be started" })
    reportGone()
    return { send: () => {}, kill: () => {}, destroy: () => {}, takeLogs: () => [], stderrTail: () => "" }
  }
  const pid = child.pid
  const streams = child.stdio
  const stdout = streams[1] as Readable | null
  const stderr = streams[2] as Readable | null
  const input = streams[3] as (Writable & Readable) | null
  const output = streams[4] as Readable | null
  const ignore = () => {}
  for (const stream of streams) stream?.on("error", ignore)

  const take = (bytes: Buffer) => {
    const text = partial + decoder.decode(bytes, { stream: true })
    const lines = text.split("\n")
    partial = lines.pop() ?? ""
    for (const line of lines) logs.push(line)
  }
  stdout?.on("data", (chunk: Buffer) => {
    if (consoleFull) return
    const room = consoleBytes - consoleUsed
    if (chunk.length > room) {
      take(chunk.subarray(0, room))
      consoleUsed = consoleBytes
      consoleFull = true
      onEvent({ _tag: "ConsoleFull" })
      return
    }
    consoleUsed += chunk.length
    take(chunk)
  })
  stderr?.on("data", (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-TAIL_BYTES)
  })
  input?.resume()
  output?.on("data", (chunk: Buffer) => {
    if (protocolDone) return
    let start = 0
    for (;;) {
      const at = chunk.indexOf(10, start)
      if (at === -1) break
      const piece = chunk.subarray(start, at)
      start = at + 1
      if (frameBytes + piece.length > messageBytes) {
        protocolDone = true
        onEvent({ _tag: "TooLarge" })
        return
      }
      const line = frame.length === 0 ? piece : Buffer.concat([...frame, piece])
      frame = []
      frameBytes = 0
      const event = parse(line)
      onEvent(event)
      if (event._tag === "Broken") {
        protocolDone = true
        return
      }
    }
    if (start < chunk.length) {
      const rest = Buffer.from(chunk.subarray(start))
      frameBytes += rest.length
      if (frameBytes > messageBytes) {
        protocolDone = true
        onEvent({ _tag: "TooLarge" })
        return
      }
      frame.push(rest)
    }
  })
  const killGroup = () => {
    if (pid === undefined) return
    try {
      process.kill(-pid, "SIGKILL")
    } catch {
      // already gone
    }
  }
  child.on("error", (error: NodeJS.ErrnoException) => {
    if (pid === undefined || child.pid === undefined) {
      onEvent({ _tag: "SpawnFailed", reason: `the Python process could not be started (${String(error.code)})` })
      reportGone()
    }
  })
  child.on("exit", () => {
    exited = true
    killGroup()
    if (!goneReported) {
      grace = setTimeout(reportGone, GONE_GRACE_MS)
      grace.unref()
    }
  })
  child.on("close", (code: number | null, signal: NodeJS.Signals | null) => {
    onEvent({ _tag: "Closed", code, signal })
    reportGone()
  })
  return {
    send: (line) => {
      if (input !== null && !input.destroyed && input.writable) input.write(line)
    },
    kill: () => {
      if (!exited) killGroup()
    },
    destroy: () => {
      for (const stream of streams) stream?.destroy()
    },
    takeLogs: () => {
      const rest = partial + decoder.decode()
      partial = ""
      if (rest.length > 0) logs.push(rest)
      return logs
    },
    stderrTail: () => tail
  }
}
