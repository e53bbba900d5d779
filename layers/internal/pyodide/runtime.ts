/**
 * The Pyodide runtime service over its worker pool: one run takes a worker whose interpreter is
 * warm, sends it the program, dispatches the binding calls its runner reports (the subprocess
 * runtime's protocol, read as hostile input) to the caller's fibers, and enforces the limits
 * from the main thread: CPU time (read from the interpreter's control buffer, stopped with the
 * interrupt signal), wall time (Effect's `Clock`), calls and the queue of calls in flight. Any
 * stop writes SIGINT into the control buffer and wakes the worker; a worker that does not end
 * the run within a grace period is terminated (and replaced), so no program outlives its limit.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import type * as Scope from "effect/Scope"
import type { CodeRunRequest, CodeRunResult, Limits, Service } from "../../../src/CodeRuntime.js"
import { CodeRuntimeError, SandboxUnavailableError } from "../../../src/CodeRuntime.js"
import * as Json from "../../../src/Json.js"
import { onAbort } from "../quickjs/inThread.js"
import type { GuestEvent } from "../python/guest.js"
import { parse } from "../python/guest.js"
import { readRequest } from "../python/request.js"
import type { ReadRequest } from "../python/request.js"
import { ABORTED, ARGUMENTS_PREFIX, CLOSED, completed, failed, NO_ARGUMENTS, recursionLimit, reported, settle, stops } from "../python/run.js"
import type { Member } from "./pool.js"
import { Pool } from "./pool.js"
import { SIGINT, SLOT } from "./protocol.js"
import { REALM_BROKEN } from "./realmSetup.js"

/** How long a worker may take to end a stopped run before it is terminated. */
const KILL_GRACE_MS = 1_500

/** How often the main thread reads a running program's CPU time. */
const CPU_POLL_MS = 10

interface Stop {
  readonly kind: NonNullable<CodeRunResult["error"]>["kind"]
  readonly message: string
}

interface State {
  readonly pool: Pool
  readonly limits: Limits
  readonly active: Set<{ readonly stop: (stop: Stop) => void; readonly done: Promise<CodeRunResult> }>
  closed: boolean
  runs: number
}

const configOf = (input: ReadRequest, limits: Limits): string =>
  JSON.stringify({
    program: input.program,
    namespaces: input.namespaces.map((namespace) => ({
      global: namespace.global,
      names: namespace.names,
      errorClass: namespace.errorClass === undefined
        ? null
        : { name: namespace.errorClass.name, member: namespace.errorClass.memberNameProperty }
    })),
    resultBytes: limits.resultBytes,
    recursionLimit: recursionLimit(limits),
    messages: { noArgs: NO_ARGUMENTS, argsPrefix: ARGUMENTS_PREFIX }
  })

const acquire = (pool: Pool) =>
  Effect.async<Member | undefined>((resume) => {
    const { cancel, member } = pool.acquire()
    member.then((handed) => resume(Effect.succeed(handed)))
    return Effect.sync(cancel)
  })

const runOn = (state: State, input: ReadRequest) =>
  Effect.gen(function*() {
    const { limits } = state
    const fork = yield* FiberSet.makeRuntime<never, void, never>()
    const member = yield* acquire(state.pool)
    if (member === undefined) {
      return failed([], state.closed ? "abort" : "worker-exit", state.closed ? CLOSED : "no Pyodide worker could be started")
    }
    const flags = new Int32Array(member.control!)
    const run = ++state.runs
    const base = Date.now()
    let settleRun!: (result: CodeRunResult) => void
    const done = new Promise<CodeRunResult>((resolve) => (settleRun = resolve))
    let requested: Stop | undefined
    let report: (GuestEvent & { _tag: "Done" | "Failed" }) | undefined
    let killTimer: ReturnType<typeof setTimeout> | undefined
    const stop = (reason: Stop) => {
      if (requested !== undefined) return
      requested = reason
      Atomics.store(flags, SLOT.signal, SIGINT)
      member.send({ type: "stop", run })
      killTimer = setTimeout(() => void member.worker.terminate(), KILL_GRACE_MS)
      killTimer.unref()
    }
    const cpuTimer = setInterval(() => {
      const computing = Atomics.load(flags, SLOT.computing) === 1
      const used = Atomics.load(flags, SLOT.used) +
        (computing ? Date.now() - base - Atomics.load(flags, SLOT.sliceStart) : 0)
      if (used > limits.cpuMs) stop({ kind: "timeout", message: stops.cpu(limits) })
    }, CPU_POLL_MS)
    cpuTimer.unref()
    let count = 0
    let active = 0
    let lastId = 0
    const waiting: Array<{ readonly id: number; readonly binding: Parameters<typeof settle>[0]; readonly args: Json.JsonValue }> = []
    const dispatch = (call: (typeof waiting)[number]) => {
      active++
      fork(Effect.flatMap(settle(call.binding, call.id, call.args), (line) =>
        Effect.sync(() => {
          active--
          member.send({ type: "settle", run, line })
          while (active < limits.maxInFlight && waiting.length > 0 && requested === undefined) dispatch(waiting.shift()!)
        })))
    }
    member.listener = {
      onLine: (line) => {
        if (requested !== undefined) return
        const event = parse(Buffer.from(line, "latin1"))
        switch (event._tag) {
          case "Call": {
            const binding = input.namespaces[event.ns]?.functions.get(event.name)
            if (binding === undefined || event.id <= lastId) {
              return stop({ kind: "worker-exit", message: "the program broke the runtime protocol" })
            }
            lastId = event.id
            const args = Json.snapshot(event.args)
            if (args._tag !== "Lossless") {
              member.send({ type: "settle", run, line: `${event.id} e ${JSON.stringify(NO_ARGUMENTS)}\n` })
              return
            }
            if (++count > limits.maxToolCalls) return stop({ kind: "call-limit", message: stops.calls(limits) })
            const call = { id: event.id, binding, args: args.value }
            if (active < limits.maxInFlight) dispatch(call)
            else waiting.push(call)
            return
          }
          case "Done":
          case "Failed":
            report ??= event
            return
          case "Broken":
            return stop({ kind: "worker-exit", message: `the program broke the runtime protocol (${event.reason})` })
          default:
            return
        }
      },
      onStopping: () => stop({ kind: "output-limit", message: stops.console(limits) }),
      onDone: (message) => {
        const logs = Array.from(message.logs)
        if (requested !== undefined) return settleRun(failed(logs, requested.kind, requested.message))
        if (message.outOfMemory) return settleRun(failed(logs, "memory", stops.memory(limits)))
        if (message.failure !== undefined) return settleRun(failed(logs, message.failure.kind, message.failure.message))
        if (report === undefined) return settleRun(failed(logs, "worker-exit", "the interpreter ended without a result"))
        settleRun(report._tag === "Done" ? completed({ limits }, logs, report.hasValue, report.value) : reported({ limits }, logs, report))
      },
      onExit: (description, outOfMemory) => {
        if (requested !== undefined) return settleRun(failed([], requested.kind, requested.message))
        settleRun(outOfMemory
          ? failed([], "memory", "the interpreter's JavaScript heap exceeded the worker's limit")
          : failed([], "worker-exit", description))
      }
    }
    const entry = { stop, done }
    state.active.add(entry)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        state.active.delete(entry)
        clearInterval(cpuTimer)
        if (killTimer !== undefined) clearTimeout(killTimer)
        if (member.listener !== undefined && requested === undefined) member.listener = undefined
      })
    )
    if (state.closed) stop({ kind: "abort", message: CLOSED })
    member.send({ type: "run", run, config: configOf(input, limits), base })
    yield* onAbort(input.signal, () => stop({ kind: "abort", message: ABORTED }))
    yield* Effect.forkScoped(
      Effect.andThen(Effect.sleep(Duration.millis(limits.wallMs)), Effect.sync(() => stop({ kind: "timeout", message: stops.wall(limits) })))
    )
    return yield* Effect.async<CodeRunResult>((resume) => {
      done.then((result) => resume(Effect.succeed(result)))
      return Effect.promise(() => {
        stop({ kind: "abort", message: "the run was interrupted" })
        return done
      })
    })
  })

/** The service over a pool started with the scope and terminated (every worker awaited) when it closes. @internal */
export const make = (
  limits: Limits,
  poolSize: number
): Effect.Effect<Service, CodeRuntimeError | SandboxUnavailableError, Scope.Scope> =>
  Effect.gen(function*() {
    const pool = new Pool(limits, poolSize)
    const state: State = { pool, limits, active: new Set(), closed: false, runs: 0 }
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () =>
          pool.start().catch(async (error: unknown) => {
            await pool.close()
            throw error
          }),
        catch: (error) => {
          const message = error instanceof Error ? error.message : "the Pyodide workers could not start"
          const at = message.indexOf(REALM_BROKEN)
          return at === -1 ? new CodeRuntimeError({ message }) : new SandboxUnavailableError({
            runtime: "CodeRuntimePyodide",
            missing: message.slice(at),
            remedy: "run on Node 20 or newer with the pinned pyodide@314.0.7; this Node's vm module does not isolate the realm"
          })
        }
      }),
      () =>
        Effect.promise(async () => {
          state.closed = true
          const live = [...state.active]
          for (const entry of live) entry.stop({ kind: "abort", message: CLOSED })
          await Promise.all(live.map((entry) => entry.done))
          await pool.close()
        })
    )
    const run = (request: CodeRunRequest): Effect.Effect<CodeRunResult, CodeRuntimeError> =>
      Effect.suspend(() => {
        if (state.closed) return Effect.fail(new CodeRuntimeError({ message: "the Pyodide runtime is closed" }))
        const input = readRequest(request)
        if (typeof input === "string") return Effect.fail(new CodeRuntimeError({ message: input }))
        if (input.signal?.aborted === true) return Effect.succeed(failed([], "abort", ABORTED))
        const sourceBytes = Buffer.byteLength(input.program)
        if (sourceBytes > limits.sourceBytes) {
          return Effect.succeed(failed([], "output-limit", stops.source(limits, sourceBytes)))
        }
        return Effect.scoped(runOn(state, input))
      })
    return {
      language: "python",
      isolation: "wasm",
      run: Effect.fn("CodeRuntimePyodide.run")(function*(request: CodeRunRequest) {
        return yield* run(request)
      })
    }
  })
