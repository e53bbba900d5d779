/** @internal */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import { constants } from "node:os"
import type { Binding, CodeRunErrorKind, CodeRunResult, Limits } from "../../../src/CodeRuntime.js"
import * as Json from "../../../src/Json.js"
import type { Guest, GuestEvent } from "./guest.js"
import { spawnGuest } from "./guest.js"
import type { PythonLimits } from "./options.js"
import type { ReadRequest } from "./request.js"
import type { Launch } from "./sandbox.js"
import { makeWorkdir, removeWorkdir } from "./sandbox.js"

/** A live run, as the runtime's scope sees it. @internal */
export interface LiveRun {
  /** Stops the run: its outcome becomes `abort` and its process is killed. */
  readonly dispose: () => void
  readonly exited: Deferred.Deferred<void>
}

/** The runtime's live runs. @internal */
export interface Registry {
  closed: boolean
  readonly live: Set<LiveRun>
}

/** @internal */
export interface RunSpec extends ReadRequest {
  readonly launch: Launch
  readonly limits: Limits
  readonly python: PythonLimits
  readonly registry: Registry
}

/** The PTC-8 messages of a call whose arguments are not lossless JSON. @internal */
export const NO_ARGUMENTS = "tool arguments must be lossless JSON (call the tool with an arguments object, e.g. `{}`)"

/** @internal */
export const ARGUMENTS_PREFIX = "tool arguments must be lossless JSON: "

/** @internal */
export const ABORTED = "the run was aborted"

/** @internal */
export const CLOSED = "the code runtime was shut down"

/** @internal */
export const formatBytes = (bytes: number): string =>
  bytes % (1024 * 1024) === 0
    ? `${bytes / (1024 * 1024)} MiB`
    : bytes % 1024 === 0
    ? `${bytes / 1024} KiB`
    : `${bytes} bytes`

/** @internal */
export const stops = {
  cpu: (limits: Limits) => `the program used more than ${limits.cpuMs} ms of CPU time`,
  wall: (limits: Limits) => `the run took longer than ${limits.wallMs} ms of wall time (tool calls included)`,
  memory: (limits: Limits) => `the program exceeded the ${formatBytes(limits.memoryBytes)} memory limit`,
  stack: (limits: Limits, detail: string | undefined) =>
    `the program exceeded the ${recursionLimit(limits)}-frame stack limit${detail === undefined ? "" : ` (${detail})`}`,
  console: (limits: Limits) => `the program printed more than the ${formatBytes(limits.consoleBytes)} console limit`,
  result: (limits: Limits, bytes: number) =>
    `the program's result is ${bytes} bytes of JSON, over the ${formatBytes(limits.resultBytes)} result limit`,
  invalid: (detail: string) => `the program's result is not lossless JSON: ${detail}`,
  source: (limits: Limits, bytes: number) =>
    `the program is ${bytes} bytes, over the ${formatBytes(limits.sourceBytes)} source limit`,
  calls: (limits: Limits) => `the program made more than ${limits.maxToolCalls} tool calls`
}

type Event =
  | GuestEvent
  | { readonly _tag: "Settled"; readonly line: string }
  | { readonly _tag: "Wall" }
  | { readonly _tag: "Aborted" }
  | { readonly _tag: "Disposed" }

const WALL: Event = { _tag: "Wall" }
const ABORT: Event = { _tag: "Aborted" }
const DISPOSED: Event = { _tag: "Disposed" }

const MESSAGE_CHARS = 8000

const clip = (text: string): string => text.length > MESSAGE_CHARS ? `${text.slice(0, MESSAGE_CHARS)}…` : text

/** @internal */
export const failed = (logs: ReadonlyArray<string>, kind: CodeRunErrorKind, message: string): CodeRunResult => ({
  logs,
  error: { kind, message }
})

const signalNames = new Map<number, string>(
  Object.entries(constants.signals).map(([name, number]) => [number, name])
)

const signalOf = (code: number | null, signal: NodeJS.Signals | null, wrapped: boolean): string | undefined => {
  if (signal !== null) return signal
  if (wrapped && code !== null && code > 128) return signalNames.get(code - 128)
  return undefined
}

const reply = (id: number, ok: boolean, json: string): string => `${id} ${ok ? "v" : "e"} ${json}\n`

const failureMessage = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    try {
      const error = failure.value
      const message = typeof error === "object" && error !== null ? (error as { message?: unknown }).message : undefined
      if (typeof message === "string") return message
    } catch {
      // a failure that cannot be read says nothing
    }
    return "tool call failed"
  }
  return Cause.isInterruptedOnly(cause) ? "the tool call was interrupted" : "the tool call failed unexpectedly"
}

/** Runs one binding call and gives the settlement line the runner reads. @internal */
export const settle = (binding: Binding, id: number, args: Json.JsonValue): Effect.Effect<string> =>
  Effect.suspend(() => {
    const effect: unknown = binding(args)
    return Effect.isEffect(effect)
      ? effect as Effect.Effect<unknown, unknown>
      : Effect.dieMessage("a binding returned something that is not an Effect")
  }).pipe(
    Effect.matchCause({
      onFailure: (cause) => reply(id, false, JSON.stringify(failureMessage(cause))),
      onSuccess: (value) => {
        const copy = Json.snapshot(value)
        if (copy._tag === "NotLossless") return reply(id, false, JSON.stringify("the tool result is not lossless JSON"))
        if (copy._tag === "Threw") return reply(id, false, JSON.stringify("the tool result could not be read"))
        try {
          return reply(id, true, JSON.stringify(copy.value))
        } catch {
          return reply(id, false, JSON.stringify("the tool result could not be serialized"))
        }
      }
    })
  )

const configLine = (spec: RunSpec): string =>
  JSON.stringify({
    program: spec.program,
    namespaces: spec.namespaces.map((namespace) => ({
      global: namespace.global,
      names: namespace.names,
      errorClass: namespace.errorClass === undefined
        ? null
        : { name: namespace.errorClass.name, member: namespace.errorClass.memberNameProperty }
    })),
    cpuMs: spec.limits.cpuMs,
    memoryBytes: spec.limits.memoryBytes,
    resultBytes: spec.limits.resultBytes,
    recursionLimit: recursionLimit(spec.limits),
    openFiles: spec.python.openFiles,
    fileBytes: spec.python.fileBytes,
    messages: { noArgs: NO_ARGUMENTS, argsPrefix: ARGUMENTS_PREFIX }
  }) + "\n"

/** Python frames allowed: one per KiB of `stackBytes`, at least 64. @internal */
export const recursionLimit = (limits: Limits): number => Math.max(64, Math.floor(limits.stackBytes / 1024))

interface Call {
  readonly id: number
  readonly binding: Binding
  readonly args: Json.JsonValue
}

/** A completed program's outcome: its value checked against the result rules. @internal */
export const completed = (
  spec: { readonly limits: Limits },
  logs: Array<string>,
  hasValue: boolean,
  value: unknown
): CodeRunResult => {
  if (!hasValue) return { logs }
  const copy = Json.snapshotFrozen(value)
  if (copy._tag !== "Lossless") return failed(logs, "invalid-output", stops.invalid("a value JSON cannot hold"))
  let bytes: number
  try {
    bytes = Buffer.byteLength(JSON.stringify(copy.value))
  } catch {
    return failed(logs, "invalid-output", stops.invalid("nested too deeply"))
  }
  if (bytes > spec.limits.resultBytes) return failed(logs, "output-limit", stops.result(spec.limits, bytes))
  return { value: copy.value, logs }
}

/** The outcome a runner reported about itself. @internal */
export const reported = (
  spec: { readonly limits: Limits },
  logs: Array<string>,
  event: GuestEvent & { _tag: "Failed" }
): CodeRunResult => {
  const detail = event.message === undefined ? undefined : clip(event.message)
  switch (event.kind) {
    case "timeout":
      return failed(logs, "timeout", stops.cpu(spec.limits))
    case "memory":
      return failed(logs, "memory", stops.memory(spec.limits))
    case "stack":
      return failed(logs, "memory", stops.stack(spec.limits, detail))
    case "invalid-output":
      return failed(logs, "invalid-output", stops.invalid(detail ?? "a value JSON cannot hold"))
    case "result-size": {
      const bytes = Number(detail)
      return Number.isSafeInteger(bytes) && bytes > spec.limits.resultBytes
        ? failed(logs, "output-limit", stops.result(spec.limits, bytes))
        : failed(logs, "worker-exit", "the program broke the runtime protocol (a malformed error report)")
    }
    case "exception":
      return failed(logs, "exception", detail ?? "the program failed")
  }
}

const exitedWithout = (spec: RunSpec, guest: Guest, code: number | null, signal: NodeJS.Signals | null) => {
  const logs = guest.takeLogs()
  const name = signalOf(code, signal, spec.launch.wrapped)
  if (name === "SIGXCPU" || name === "SIGKILL") return failed(logs, "timeout", stops.cpu(spec.limits))
  if (name === "SIGXFSZ") {
    const limit = spec.python.fileBytes
    return failed(logs, "output-limit", `the program wrote a file over the ${limit}-byte file size limit`)
  }
  if (name !== undefined) return failed(logs, "worker-exit", `the Python process was killed by ${name}`)
  const stderr = guest.stderrTail().trim().split("\n").pop() ?? ""
  const why = stderr.length === 0 ? "" : `: ${clip(stderr)}`
  return failed(
    logs,
    "worker-exit",
    code === 0
      ? `the Python process exited without a result${why}`
      : `the Python process exited with code ${code}${why}`
  )
}

const drive = (
  spec: RunSpec,
  guest: Guest,
  events: Queue.Queue<Event>,
  calls: FiberSet.FiberSet<void, never>
): Effect.Effect<CodeRunResult> =>
  Effect.gen(function*() {
    const { limits } = spec
    const waiting: Array<Call | undefined> = []
    let next = 0
    let active = 0
    let lastId = 0
    let count = 0
    let report: (GuestEvent & { _tag: "Done" | "Failed" }) | undefined
    const start = (call: Call) =>
      FiberSet.run(
        calls,
        Effect.flatMap(
          settle(call.binding, call.id, call.args),
          (line) => Queue.offer(events, { _tag: "Settled", line })
        )
      )
    for (;;) {
      const event = yield* Queue.take(events)
      switch (event._tag) {
        case "Call": {
          if (report !== undefined) break
          const binding = spec.namespaces[event.ns]?.functions.get(event.name)
          if (binding === undefined || event.id <= lastId) {
            return failed(guest.takeLogs(), "worker-exit", "the program broke the runtime protocol")
          }
          lastId = event.id
          const args = Json.snapshot(event.args)
          if (args._tag !== "Lossless") {
            guest.send(reply(event.id, false, JSON.stringify(NO_ARGUMENTS)))
            break
          }
          count++
          if (count > limits.maxToolCalls) {
            return failed(guest.takeLogs(), "call-limit", stops.calls(limits))
          }
          const call: Call = { id: event.id, binding, args: args.value }
          if (active < limits.maxInFlight) {
            active++
            yield* start(call)
          } else {
            waiting.push(call)
          }
          break
        }
        case "Settled": {
          guest.send(event.line)
          active--
          while (active < limits.maxInFlight && next < waiting.length) {
            const queued = waiting[next]!
            waiting[next++] = undefined
            active++
            yield* start(queued)
          }
          break
        }
        case "Done":
        case "Failed":
          report ??= event
          break
        case "Closed": {
          if (report === undefined) return exitedWithout(spec, guest, event.code, event.signal)
          return report._tag === "Done"
            ? completed(spec, guest.takeLogs(), report.hasValue, report.value)
            : reported(spec, guest.takeLogs(), report)
        }
        case "Broken":
          return failed(guest.takeLogs(), "worker-exit", `the program broke the runtime protocol (${event.reason})`)
        case "TooLarge":
          return failed(
            guest.takeLogs(),
            "output-limit",
            `a message from the program is over the ${formatBytes(spec.python.messageBytes)} message limit`
          )
        case "ConsoleFull":
          return failed(guest.takeLogs(), "output-limit", stops.console(limits))
        case "SpawnFailed":
          return failed(guest.takeLogs(), "worker-exit", event.reason)
        case "Wall":
          return failed(guest.takeLogs(), "timeout", stops.wall(limits))
        case "Aborted":
          return failed(guest.takeLogs(), "abort", ABORTED)
        case "Disposed":
          return failed(guest.takeLogs(), "abort", CLOSED)
      }
    }
  })

/**
 * Runs one program in a fresh process and reports its outcome as a value. The run's scope owns
 * the temporary directory, the process (killed and awaited on every exit path, interruption
 * included) and the binding fibers (interrupted when the run ends, so late results are dropped).
 *
 * @internal
 */
export const runProgram = (spec: RunSpec): Effect.Effect<CodeRunResult> =>
  Effect.gen(function*() {
    const events = yield* Queue.unbounded<Event>()
    const offer = (event: Event) => {
      Queue.unsafeOffer(events, event)
    }
    const signal = spec.signal
    if (signal !== undefined) {
      const onAbort = () => offer(ABORT)
      yield* Effect.acquireRelease(
        Effect.sync(() => signal.addEventListener("abort", onAbort, { once: true })),
        () => Effect.sync(() => signal.removeEventListener("abort", onAbort))
      )
      if (signal.aborted) return failed([], "abort", ABORTED)
    }
    const sourceBytes = Buffer.byteLength(spec.program)
    if (sourceBytes > spec.limits.sourceBytes) {
      return failed([], "output-limit", stops.source(spec.limits, sourceBytes))
    }
    const workdir = yield* Effect.acquireRelease(
      Effect.try(() => makeWorkdir(spec.launch.workdirOwner)),
      (dir) => Effect.sync(() => removeWorkdir(dir))
    )
    const calls = yield* FiberSet.make<void, never>()
    const exited = yield* Deferred.make<void>()
    const guest = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const entry: LiveRun = {
          dispose: () => {
            offer(DISPOSED)
            guest.kill()
          },
          exited
        }
        const guest = spawnGuest({
          argv: spec.launch.argv(workdir),
          cwd: workdir,
          consoleBytes: spec.limits.consoleBytes,
          messageBytes: spec.python.messageBytes,
          onEvent: offer,
          onGone: () => Deferred.unsafeDone(exited, Exit.void)
        })
        spec.registry.live.add(entry)
        if (spec.registry.closed) entry.dispose()
        return { guest, entry }
      }),
      ({ entry, guest }) =>
        Effect.sync(guest.kill).pipe(
          Effect.zipRight(Deferred.await(exited)),
          Effect.ensuring(Effect.sync(() => {
            guest.destroy()
            spec.registry.live.delete(entry)
          }))
        )
    ).pipe(Effect.map(({ guest }) => guest))
    yield* Effect.forkScoped(
      Effect.zipRight(Effect.sleep(Duration.millis(spec.limits.wallMs)), Queue.offer(events, WALL))
    )
    guest.send(configLine(spec))
    return yield* drive(spec, guest, events, calls)
  }).pipe(
    Effect.scoped,
    Effect.catchAll(() =>
      Effect.succeed(failed([], "worker-exit", "the run's temporary directory could not be created"))
    )
  )
