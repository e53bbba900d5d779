/**
 * The in-thread host of the QuickJS runtime: sessions run in the caller's thread, binding calls
 * run as fibers of a per-run `FiberSet` (interrupted and awaited when the run ends), the wall
 * timer sleeps on Effect's `Clock`, and the caller's signal or fiber interruption stops the run.
 * Closing the layer's scope stops every live run and waits for its teardown.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import type * as Scope from "effect/Scope"
import type { CodeRunRequest, CodeRunResult, Service } from "../../../src/CodeRuntime.js"
import { CodeRuntimeError } from "../../../src/CodeRuntime.js"
import { callBinding } from "./bindings.js"
import type { Config } from "./config.js"
import type { Engine } from "./engine.js"
import { loadEngine } from "./engine.js"
import type { RunInput } from "./request.js"
import { readRequest } from "./request.js"
import type { Prepared } from "./source.js"
import { loadStripper, prepare } from "./source.js"
import type { Plan, SessionHost } from "./session.js"
import { Session, stopped } from "./session.js"

const messageOf = (error: unknown): string => error instanceof Error ? error.message : "the engine could not be loaded"

/** The engine (and amaro when the runtime runs TypeScript), loaded once per process. @internal */
export const loadParts = (config: Config) =>
  Effect.tryPromise({
    try: () => Promise.all([loadEngine(), config.typescript ? loadStripper() : Promise.resolve(undefined)]),
    catch: (error) => new CodeRuntimeError({ message: messageOf(error) })
  })

/** The result of a run that never reached the engine. @internal */
export const refused = (prepared: Extract<Prepared, { _tag: "Refused" }>): CodeRunResult => ({
  logs: [],
  error: { kind: prepared.kind, message: prepared.message }
})

/** @internal */
export const planOf = (input: RunInput, prepared: Extract<Prepared, { _tag: "Ready" }>, config: Config): Plan => ({
  code: prepared.code,
  filename: prepared.filename,
  lines: prepared.lines,
  namespaces: input.namespaces,
  limits: config.limits
})

/** Stops the run when `signal` aborts, for the life of the current scope. @internal */
export const onAbort = (signal: AbortSignal | undefined, stop: () => void): Effect.Effect<void, never, Scope.Scope> =>
  signal === undefined
    ? Effect.void
    : Effect.acquireRelease(
      Effect.sync(() => signal.addEventListener("abort", stop, { once: true })),
      () => Effect.sync(() => signal.removeEventListener("abort", stop))
    )

interface State {
  readonly sessions: Set<Session>
  closed: boolean
}

const runSession = (engine: Engine, config: Config, input: RunInput, plan: Plan, state: State) =>
  Effect.gen(function*() {
    const fork = yield* FiberSet.makeRuntime<never, void, never>()
    const instance = yield* Effect.either(Effect.tryPromise(() => engine.instantiate(config.limits.memoryBytes)))
    if (instance._tag === "Left") {
      return { logs: [], error: { kind: "worker-exit", message: "the engine instance could not be created" } } as const
    }
    let session: Session | undefined
    const outbox: Array<readonly [number, number, number, string]> = []
    const flush = () => {
      for (const [call, namespace, index, args] of outbox.splice(0)) {
        const binding = input.functions[namespace].get(input.namespaces[namespace].names[index])!
        fork(Effect.flatMap(callBinding(binding, args), (outcome) => Effect.sync(() => session!.settle(call, outcome))))
      }
    }
    const host: SessionHost = {
      dispatch: (call, namespace, index, args) => {
        if (outbox.push([call, namespace, index, args]) === 1) queueMicrotask(flush)
      }
    }
    const current = new Session(instance.right, plan, host)
    session = current
    state.sessions.add(current)
    if (state.closed) current.stop(stopped.shutDown)
    yield* Effect.addFinalizer(() => Effect.sync(() => state.sessions.delete(current)))
    yield* onAbort(input.signal, () => current.stop(stopped.aborted))
    yield* Effect.forkScoped(
      Effect.andThen(
        Effect.sleep(Duration.millis(config.limits.wallMs)),
        Effect.sync(() => current.stop(stopped.wall(config.limits)))
      )
    )
    return yield* Effect.async<CodeRunResult>((resume) => {
      current.result.then((result) => resume(Effect.succeed(result)))
      return Effect.promise(() => {
        current.stop(stopped.interrupted)
        return current.result
      })
    })
  })

/**
 * The runtime service over the process's engine, in the caller's thread.
 *
 * @internal
 */
export const make = (config: Config): Effect.Effect<Service, CodeRuntimeError, Scope.Scope> =>
  Effect.gen(function*() {
    const [engine, stripper] = yield* loadParts(config)
    const state: State = { sessions: new Set(), closed: false }
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => {
        state.closed = true
        const live = [...state.sessions]
        for (const session of live) session.stop(stopped.shutDown)
        return Promise.all(live.map((session) => session.result))
      })
    )
    const run = (request: CodeRunRequest): Effect.Effect<CodeRunResult, CodeRuntimeError> =>
      Effect.suspend(() => {
        if (state.closed) return Effect.fail(new CodeRuntimeError({ message: "the code runtime is shut down" }))
        const input = readRequest(request)
        if ("problem" in input) return Effect.fail(new CodeRuntimeError({ message: input.problem }))
        if (input.signal?.aborted === true) return Effect.succeed({ logs: [], error: { ...stopped.aborted } })
        const prepared = prepare(input.program, config.limits, stripper)
        if (prepared._tag === "Refused") return Effect.succeed(refused(prepared))
        return Effect.scoped(runSession(engine, config, input, planOf(input, prepared, config), state))
      })
    return {
      language: config.typescript ? "typescript" : "javascript",
      isolation: "wasm",
      run: Effect.fn("CodeRuntimeQuickJs.run")(function*(request: CodeRunRequest) {
        return yield* run(request)
      })
    }
  })
