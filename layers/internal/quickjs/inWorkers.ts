/**
 * The worker-pool host of the QuickJS runtime: each run takes a free worker (runs beyond the
 * pool wait), the program runs there, and binding calls come back to the caller's fibers (a
 * per-run `FiberSet`, interrupted and awaited when the run ends). Stops (signal, wall timer on
 * Effect's `Clock`, fiber interruption, shutdown) go through the run's shared flag, so they land
 * even while the guest computes; a worker that does not answer a stop within a grace period is
 * terminated. A worker that dies ends its run with `worker-exit` and is replaced.
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
import { onAbort } from "./inThread.js"
import type { StopCode } from "./protocol.js"
import { STOP, stopOf } from "./protocol.js"
import type { RunInput } from "./request.js"
import { readRequest } from "./request.js"
import type { Stop } from "./session.js"
import { stopped } from "./session.js"
import type { PoolWorker } from "./workerPool.js"
import { Pool } from "./workerPool.js"

/** @internal */
export interface PoolOptions {
  readonly poolSize: number
  /** Tests: the pool, once started. */
  readonly onPool?: ((pool: Pool) => void) | undefined
}

/** How long a worker may take to answer a stop before it is terminated. */
const KILL_GRACE_MS = 2_000

const noWorker: Stop = { kind: "worker-exit", message: "no QuickJS worker could be started" }

interface Active {
  readonly stop: (code: StopCode) => void
  readonly done: Promise<CodeRunResult>
}

interface State {
  readonly pool: Pool
  readonly active: Set<Active>
  readonly config: Config
  closed: boolean
  runs: number
}

const acquire = (pool: Pool) =>
  Effect.async<PoolWorker | undefined>((resume) => {
    const { cancel, worker } = pool.acquire()
    worker.then((handed) => resume(Effect.succeed(handed)))
    return Effect.sync(cancel)
  })

const runOn = (state: State, input: RunInput) =>
  Effect.gen(function*() {
    const limits = state.config.limits
    const fork = yield* FiberSet.makeRuntime<never, void, never>()
    const worker = yield* acquire(state.pool)
    if (worker === undefined) {
      return { logs: [], error: { ...(state.closed ? stopped.shutDown : noWorker) } } satisfies CodeRunResult
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => state.pool.release(worker)))
    const run = ++state.runs
    const flagBuffer = new SharedArrayBuffer(4)
    const flag = new Int32Array(flagBuffer)
    let settle!: (result: CodeRunResult) => void
    const done = new Promise<CodeRunResult>((resolve) => (settle = resolve))
    let requested: Stop | undefined
    let killTimer: ReturnType<typeof setTimeout> | undefined
    const stop = (code: StopCode) => {
      if (Atomics.compareExchange(flag, 0, STOP.none, code) !== STOP.none) return
      requested = stopOf(code, limits)
      worker.send({ type: "stop", run })
      killTimer = setTimeout(() => void worker.worker.terminate(), KILL_GRACE_MS)
      killTimer.unref()
    }
    worker.listener = {
      onCall: (call, namespace, index, args) => {
        const name = input.namespaces[namespace]?.names[index]
        const binding = name === undefined ? undefined : input.functions[namespace].get(name)
        if (binding === undefined) {
          worker.send({ type: "settle", run, call, outcome: { ok: false, message: "malformed tool call" } })
          return
        }
        fork(
          Effect.flatMap(callBinding(binding, args), (outcome) =>
            Effect.sync(() => worker.send({ type: "settle", run, call, outcome })))
        )
      },
      onDone: (result) => settle(result),
      onExit: (description) =>
        settle({ logs: [], error: requested === undefined ? { kind: "worker-exit", message: description } : { ...requested } })
    }
    const active: Active = { stop, done }
    state.active.add(active)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        state.active.delete(active)
        if (killTimer !== undefined) clearTimeout(killTimer)
      })
    )
    if (state.closed) stop(STOP.shutDown)
    worker.send({ type: "run", run, program: input.program, namespaces: input.namespaces, flag: flagBuffer })
    yield* onAbort(input.signal, () => stop(STOP.aborted))
    yield* Effect.forkScoped(
      Effect.andThen(Effect.sleep(Duration.millis(limits.wallMs)), Effect.sync(() => stop(STOP.wall)))
    )
    return yield* Effect.async<CodeRunResult>((resume) => {
      done.then((result) => resume(Effect.succeed(result)))
      return Effect.promise(() => {
        stop(STOP.interrupted)
        return done
      })
    })
  })

/**
 * The runtime service over a pool of worker threads, started with the scope and terminated
 * (every worker awaited) when it closes.
 *
 * @internal
 */
export const make = (config: Config, options: PoolOptions): Effect.Effect<Service, CodeRuntimeError, Scope.Scope> =>
  Effect.gen(function*() {
    const pool = new Pool(config, options.poolSize)
    const state: State = { pool, active: new Set(), config, closed: false, runs: 0 }
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () =>
          pool.start().catch(async (error: unknown) => {
            await pool.close()
            throw error
          }),
        catch: (error) =>
          new CodeRuntimeError({ message: error instanceof Error ? error.message : "the QuickJS workers could not start" })
      }),
      () =>
        Effect.promise(async () => {
          state.closed = true
          const live = [...state.active]
          for (const active of live) active.stop(STOP.shutDown)
          await Promise.all(live.map((active) => active.done))
          await pool.close()
        })
    )
    options.onPool?.(pool)
    const run = (request: CodeRunRequest): Effect.Effect<CodeRunResult, CodeRuntimeError> =>
      Effect.suspend(() => {
        if (state.closed) return Effect.fail(new CodeRuntimeError({ message: "the code runtime is shut down" }))
        const input = readRequest(request)
        if ("problem" in input) return Effect.fail(new CodeRuntimeError({ message: input.problem }))
        if (input.signal?.aborted === true) return Effect.succeed({ logs: [], error: { ...stopped.aborted } })
        return Effect.scoped(runOn(state, input))
      })
    return {
      language: config.typescript ? "typescript" : "javascript",
      isolation: "wasm",
      run: Effect.fn("CodeRuntimeQuickJs.run")(function*(request: CodeRunRequest) {
        return yield* run(request)
      })
    }
  })
