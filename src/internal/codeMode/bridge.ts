/**
 * The `run_code` bridge (PTC-5…16): the body of the Code Mode transport. It fixes the binding set
 * from the calling agent's view, runs the program in the mounted code runtime, and runs every
 * binding call as a sub-call through the whole pipeline on the run's own ordered lane (the batch
 * scheduler's lane, open: sub-calls arrive while the program runs). No sub-call outlives the
 * body: when the program ends (or the outer call is cancelled) queued sub-calls are abandoned,
 * in-flight ones are drained and committed, and every durable append is awaited.
 *
 * @internal
 */
import { setMaxListeners } from "node:events"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import { type Binding, CodeRuntime, type CodeRunResult } from "../../CodeRuntime.js"
import type * as CodeRuntimeNs from "../../CodeRuntime.js"
import type { AgentId, RunContext } from "../../Execution.js"
import * as ToolCallLog from "../../ToolCallLog.js"
import { RUN_CODE_NAME } from "../../ToolRegistry.js"
import type { Service as RegistryService } from "../../ToolRegistry.js"
import { abortError, CodeRun, type Outer } from "./codeRun.js"
import { INVALID_DESCRIPTION_MESSAGE, requireRuntime } from "./modes.js"
import { conclude, plainError, type RunCodeOutput } from "./outcome.js"
import { CurrentDurableScope } from "../base/durableScope.js"
import { batchOfScope } from "../durable/run.js"
import { DurableCodeRun } from "./durableRun.js"
import { nestedOf } from "../pipeline/pipeline.js"
import { driveLane } from "../scheduler/driver.js"

/** The `run_code` arguments after validation (PTC-1). @internal */
export interface RunCodeArgs {
  readonly description: string
  readonly code: string
}

/** The bridge's configuration (TYPES-11). @internal */
export interface BridgeOptions {
  readonly maxParallelSubCalls: number
}

/** PTC-6. @internal */
export const NAMESPACE_GLOBAL = "tools"
/** PTC-6. @internal */
export const ERROR_CLASS: CodeRuntimeNs.ErrorClass = Object.freeze({
  name: "ToolCallError",
  memberNameProperty: "toolName"
})

/** PTC-7: the run controller's reason once the program has ended. @internal */
export const SETTLED_REASON = "run_code settled"

/** PTC-6: one own property per visible tool but `run_code`, on a null-prototype map. */
const bindingsOf = (run: CodeRun, registry: RegistryService, agent: AgentId | undefined): CodeRuntimeNs.Namespace => {
  const functions: Record<string, Binding> = Object.create(null)
  for (const tool of registry.unsafeView(agent).tools) {
    const name = tool.definition.name
    if (name === RUN_CODE_NAME) continue
    Object.defineProperty(functions, name, {
      value: (args: unknown) => Effect.suspend(() => run.submit(name, args)),
      enumerable: true
    })
  }
  return Object.freeze({ global: NAMESPACE_GLOBAL, functions: Object.freeze(functions), errorClass: ERROR_CLASS })
}

const runRequest = (
  runtime: CodeRuntimeNs.Service,
  request: CodeRuntimeNs.CodeRunRequest
): Effect.Effect<CodeRunResult, unknown> =>
  Effect.suspend(() => {
    try {
      const out: unknown = runtime.run(request)
      if (Effect.isEffect(out)) return out as Effect.Effect<CodeRunResult, unknown>
    } catch (error) {
      return Effect.die(error)
    }
    return Effect.die(new Error("the code runtime's run did not return an Effect"))
  })

/** PTC-7: the run controller follows the outer signal; returns the listener's remover. */
const follow = (outer: AbortSignal, controller: AbortController): () => void => {
  if (outer.aborted) {
    controller.abort(outer.reason)
    return () => {}
  }
  const onAbort = () => controller.abort(outer.reason)
  outer.addEventListener("abort", onAbort, { once: true })
  return () => outer.removeEventListener("abort", onAbort)
}

/**
 * The `run_code` body (PTC-5…16). Runs uninterruptibly: the outer call's cancellation reaches it
 * through `ctx.signal` (the run controller aborts, the runtime stops the program, sub-calls are
 * drained), so the outcome is what the program's end produced (PTC-16) and nothing it started is
 * left running.
 *
 * @internal
 */
export const runProgram = (
  args: RunCodeArgs,
  ctx: RunContext,
  options: BridgeOptions
): Effect.Effect<RunCodeOutput, unknown> =>
  Effect.uninterruptible(Effect.gen(function*() {
    if (args.description.trim() === "") return yield* plainError(INVALID_DESCRIPTION_MESSAGE)
    const nested = nestedOf(ctx)
    if (nested === undefined) return yield* plainError("run_code runs only inside this library's ToolRuntime")
    const mounted = yield* Effect.serviceOption(CodeRuntime)
    const required = requireRuntime(nested.registry.unsafeView().mode, Option.getOrUndefined(mounted))
    if (!required.ok) return yield* Effect.fail(required.error)
    const runtime = Option.getOrThrow(mounted)
    const outer: Outer = { callId: ctx.callId, rootCallId: ctx.rootCallId, agent: ctx.agent, token: ctx.token }
    const log = outer.agent === undefined
      ? undefined
      : Option.getOrUndefined(yield* Effect.serviceOption(ToolCallLog.ToolCallLog))
    const controller = new AbortController()
    setMaxListeners(0, controller.signal)
    const scope = yield* CurrentDurableScope
    const batch = scope === undefined ? undefined : batchOfScope.get(scope)
    const run = batch === undefined
      ? new CodeRun(options.maxParallelSubCalls, controller, nested.staged, nested.registry, ctx, outer, log)
      : new DurableCodeRun(
        options.maxParallelSubCalls,
        controller,
        nested.staged,
        nested.registry,
        ctx,
        outer,
        log,
        batch.parts,
        batch
      )
    controller.signal.addEventListener("abort", () => run.wakeUp(), { once: true })
    const namespace = bindingsOf(run, nested.registry, outer.agent)
    const unfollow = follow(ctx.signal, controller)
    const lane = yield* Effect.forkDaemon(Effect.scoped(driveLane(run)))
    const program = yield* Effect.forkDaemon(
      Effect.interruptible(
        runRequest(runtime, { program: args.code, bindings: [namespace], signal: controller.signal })
      )
    )
    const exit = yield* Fiber.await(program)
    controller.abort(abortError(SETTLED_REASON))
    yield* Fiber.await(lane)
    unfollow()
    return yield* conclude(run, exit)
  }))
