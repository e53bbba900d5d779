/**
 * The audited approval service (APPR-6 without the session precondition, D-7, D-14, D-18): one
 * request audited as `approval/asked`, decided by a grant, the policy, the answerer chain or the
 * call's abort, remembered when asked to, and audited as `approval/decided` (late answers as
 * `approval/late`); answerers and policies registered per agent.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Approval from "../../Approval.js"
import type { ApprovalOutcome, ApprovalRequest } from "../../Approval.js"
import * as ApprovalGrants from "../../ApprovalGrants.js"
import type * as ApprovalService from "../../ApprovalService.js"
import type { AgentId } from "../../Execution.js"
import * as ToolCallLog from "../../ToolCallLog.js"
import type { ApprovalRecord } from "../../ToolCallLog.js"
import { detailOfCause, sanitizeThrown } from "../../ToolError.js"
import { ToolRegistry } from "../../ToolRegistry.js"
import { CurrentDurableScope } from "../base/durableScope.js"
import {
  ABORTED,
  type Decision,
  type Entry,
  FAILED,
  inScope,
  nearest,
  NEVER,
  type Restore,
  runChain,
  type RunAnswerer
} from "./chain.js"
import { INVALID_REQUEST, type ReadAnswer, readOptions, type ReadRequest, readRequest, readTarget } from "./reading.js"

const illegal = (message: string) => Effect.die(new Cause.IllegalArgumentException(message))

/** Calls a user service method that returns an Effect; a synchronous throw becomes a (safe) defect. */
const callService = <A, E>(call: () => Effect.Effect<A, E>): Effect.Effect<A, E> => {
  try {
    const out: unknown = call()
    if (Effect.isEffect(out)) return out as Effect.Effect<A, E>
  } catch (thrown) {
    return Effect.die(sanitizeThrown(thrown))
  }
  return Effect.die(new Error("the ApprovalGrants service did not return an Effect"))
}

const addListener = EventTarget.prototype.addEventListener
const removeListener = EventTarget.prototype.removeEventListener
const abortedGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")!.get!

const warnAudit = (id: string, tag: ApprovalRecord["_tag"], cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  Effect.logWarning(
    `approval ${id}: the audit record ${tag} could not be written (the request decides unavailable): ${
      detailOfCause(cause).message
    }`
  ).pipe(Effect.annotateLogs({ approvalId: id, record: tag }))

const make = (options: unknown) =>
  Effect.gen(function*() {
    const read = readOptions(options)
    if (typeof read === "string") return yield* illegal(read)
    const log = yield* ToolCallLog.ToolCallLog
    const registry = yield* ToolRegistry
    const grants = Option.getOrUndefined(yield* Effect.serviceOption(ApprovalGrants.ApprovalGrants))
    const running = yield* FiberSet.make<unknown, never>()
    const runLate = yield* FiberSet.makeRuntime<never, void, never>()
    const answerers: Array<Entry<RunAnswerer>> = []
    const policies: Array<Entry<ApprovalService.Policy>> = []
    let warnedNoGrants = false

    const lineageOf = (agent: AgentId): ReadonlyArray<AgentId> => registry.unsafeView(agent).lineage

    const effectivePolicy = (lineage: ReadonlyArray<AgentId>): ApprovalService.Policy =>
      nearest(policies, lineage) ?? read.policy

    /** Appends an audit record; `false` (logged) when it could not be stored. */
    const audit = (record: ApprovalRecord): Effect.Effect<boolean> =>
      Effect.matchCauseEffect(Effect.suspend(() => log.append(record)), {
        onFailure: (cause) => Effect.as(warnAudit(record.id, record._tag, cause), false),
        onSuccess: () => Effect.succeed(true)
      })

    const findGrant = (
      request: ReadRequest,
      lineage: ReadonlyArray<AgentId>
    ): Effect.Effect<Decision | undefined> => {
      if (grants === undefined) return Effect.succeed(undefined)
      const found = grants
      return callService(() =>
        found.find({ toolName: request.toolName, lineage, argumentsDigest: request.argumentsDigest })
      ).pipe(
        Effect.map(Option.match({
          onNone: () => undefined,
          onSome: (grant): Decision => ({ outcome: "allowed-once", by: `grant:${grant.id}` })
        })),
        Effect.catchAllCause((cause) =>
          Effect.as(
            Effect.logWarning(
              `approval grants could not be read, so the answerers are asked: ${detailOfCause(cause).message}`
            ),
            undefined
          )
        )
      )
    }

    const remember = (request: ReadRequest, decision: Decision): Effect.Effect<string | undefined> => {
      const wanted = decision.remember
      if (wanted === undefined || decision.outcome !== "allowed-once" || decision.by !== "answerer") {
        return Effect.succeed(undefined)
      }
      if (grants === undefined) {
        if (warnedNoGrants) return Effect.succeed(undefined)
        warnedNoGrants = true
        return Effect.as(
          Effect.logWarning(
            "an approval answer asked to remember a grant, but no ApprovalGrants service is provided to " +
              "ApprovalService.layer: the answer counts once (this warning is logged once per layer)"
          ),
          undefined
        )
      }
      const input: { -readonly [K in keyof ApprovalGrants.GrantInput]: ApprovalGrants.GrantInput[K] } = {
        toolName: request.toolName
      }
      if (wanted.scope === "agent") input.agent = request.agent
      if (wanted.match === "arguments") input.argumentsDigest = request.argumentsDigest
      if (wanted.ttl !== undefined) input.ttl = wanted.ttl as ApprovalGrants.GrantInput["ttl"]
      const store = grants
      return callService(() => store.grant(input)).pipe(
        Effect.map((grant): string | undefined => grant.id),
        Effect.catchAllCause((cause) =>
          Effect.as(
            Effect.logWarning(
              `approval: the remembered grant could not be stored (the answer counts once): ${
                detailOfCause(cause).message
              }`
            ),
            undefined
          )
        )
      )
    }

    /** An unaudited decision approves nothing (D-7, D-22): the grant it stored is revoked, best effort. */
    const forget = (grantId: string): Effect.Effect<void> => {
      if (grants === undefined) return Effect.void
      const store = grants
      return Effect.catchAllCause(
        Effect.asVoid(callService(() => store.revoke(grantId))),
        (cause) =>
          Effect.logWarning(
            `approval: the grant ${grantId} of an unaudited decision could not be revoked: ${detailOfCause(cause).message}`
          )
      )
    }

    /**
     * Asks the grants and the answerers on a fiber of the layer, racing the call's signal and the
     * request's own interruption. The first of answer and abort decides; an answer after an abort
     * is audited as late once the decision is written.
     */
    const askAnswerers = (
      id: string,
      request: ApprovalRequest,
      read: ReadRequest,
      lineage: ReadonlyArray<AgentId>,
      restore: Restore,
      written: Deferred.Deferred<void>
    ): Effect.Effect<Decision> =>
      Effect.gen(function*() {
        const decided = yield* Deferred.make<Decision>()
        let winner: Decision | undefined = undefined
        let fiber: Fiber.RuntimeFiber<unknown> | undefined = undefined
        const claim = (decision: Decision): boolean => {
          if (winner !== undefined) return false
          winner = decision
          Deferred.unsafeDone(decided, Exit.succeed(decision))
          return true
        }
        const onAbort = () => {
          claim(ABORTED)
          if (winner === ABORTED) fiber?.unsafeInterruptAsFork(FiberId.none)
        }
        const chain = inScope(answerers, lineage)
        const recordLate = (outcome: ApprovalOutcome, by: "answerer" | "error"): Effect.Effect<void> =>
          Effect.zipRight(Deferred.await(written), Effect.asVoid(audit({ _tag: "approval/late", id, outcome, by })))
        const lateAnswer = (read: ReadAnswer): void => {
          if (read._tag === "Answer") runLate(recordLate(read.outcome, "answerer"))
          else if (read._tag === "Rogue") runLate(recordLate("unavailable", "error"))
        }
        const settle = (decision: Decision | undefined): Effect.Effect<void> => {
          if (decision === undefined || claim(decision)) return Effect.void
          if (decision.by !== "answerer" && decision.by !== "error") return Effect.void
          return recordLate(decision.outcome, decision.by)
        }
        const work = Effect.interruptible(Effect.uninterruptibleMask((restoreWork) =>
          Effect.flatMap(Effect.exit(restoreWork(findGrant(read, lineage))), (grant) => {
            if (Exit.isFailure(grant)) return Effect.void
            if (grant.value !== undefined) return settle(grant.value)
            return Effect.flatMap(runChain(chain, request, restoreWork, () => winner !== undefined, lateAnswer), settle)
          })
        ))
        const settled = Effect.onExit(work, (exit) => Exit.isFailure(exit) ? Effect.sync(() => claim(FAILED)) : Effect.void)
        addListener.call(read.signal, "abort", onAbort, { once: true })
        fiber = yield* FiberSet.run(running, settled)
        if (winner === ABORTED || abortedGetter.call(read.signal) === true) onAbort()
        const exit = yield* Effect.exit(restore(Deferred.await(decided)))
        removeListener.call(read.signal, "abort", onAbort)
        if (Exit.isSuccess(exit)) return exit.value
        onAbort()
        return winner ?? ABORTED
      })

    const request = (request: ApprovalRequest): Effect.Effect<ApprovalOutcome, Approval.ApprovalRequestError> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const checked = readRequest(request)
          if (checked === undefined) return yield* new Approval.ApprovalRequestError({ message: INVALID_REQUEST })
          const durable = yield* CurrentDurableScope
          const id = durable === undefined ? read.ids.next() : durable.approvalId(checked.callId)
          const asked: ToolCallLog.ApprovalAskedRecord = checked.reason === undefined
            ? {
              _tag: "approval/asked",
              id,
              toolName: checked.toolName,
              callId: checked.callId,
              agent: checked.agent,
              argumentsDigest: checked.argumentsDigest
            }
            : {
              _tag: "approval/asked",
              id,
              toolName: checked.toolName,
              callId: checked.callId,
              agent: checked.agent,
              reason: checked.reason,
              argumentsDigest: checked.argumentsDigest
            }
          const askedWritten = yield* audit(asked)
          const written = yield* Deferred.make<void>()
          const lineage = lineageOf(checked.agent)
          let decision: Decision
          if (!askedWritten) decision = FAILED
          else if (abortedGetter.call(checked.signal) === true) decision = ABORTED
          else if (effectivePolicy(lineage) === "never") decision = NEVER
          else decision = yield* askAnswerers(id, request, checked, lineage, restore, written)
          if (decision.suspended === true) return decision.outcome
          const remembered = yield* remember(checked, decision)
          const decided = yield* audit(
            remembered === undefined
              ? { _tag: "approval/decided", id, outcome: decision.outcome, by: decision.by }
              : { _tag: "approval/decided", id, outcome: decision.outcome, by: decision.by, remembered }
          )
          yield* Deferred.succeed(written, undefined)
          if (decided) return decision.outcome
          if (remembered !== undefined) yield* forget(remembered)
          return "unavailable"
        })
      )

    const answer = <E, R>(
      answerer: ApprovalService.Answerer<E, R>,
      options?: ApprovalService.AnswerOptions
    ): Effect.Effect<void, never, Scope.Scope | R> =>
      Effect.suspend(() => {
        if (typeof answerer !== "function") return illegal("ApprovalService.answer needs a function")
        const target = readTarget("ApprovalService.answer", options)
        if (typeof target === "string") return illegal(target)
        return Effect.flatMap(Effect.context<R>(), (captured) => {
          const context = Context.omit(Scope.Scope, Layer.CurrentMemoMap)(captured) as Context.Context<never>
          const run: RunAnswerer = (req) => {
            const out = answerer(req)
            return Effect.isEffect(out)
              ? Effect.mapInputContext(out as Effect.Effect<unknown, unknown>, (outer) => Context.merge(outer, context))
              : out as never
          }
          const entry: Entry<RunAnswerer> = { owner: target.agent, value: run }
          return Effect.acquireRelease(
            Effect.sync(() => {
              if (target.prepend) answerers.unshift(entry)
              else answerers.push(entry)
            }),
            () => Effect.sync(() => remove(answerers, entry))
          )
        })
      })

    const setPolicy = (
      policy: ApprovalService.Policy,
      options?: ApprovalService.PolicyOptions
    ): Effect.Effect<void, never, Scope.Scope> =>
      Effect.suspend(() => {
        if (policy !== "ask" && policy !== "never") {
          return illegal("ApprovalService.setPolicy needs \"ask\" or \"never\"")
        }
        const target = readTarget("ApprovalService.setPolicy", options)
        if (typeof target === "string") return illegal(target)
        const entry: Entry<ApprovalService.Policy> = { owner: target.agent, value: policy }
        return Effect.acquireRelease(
          Effect.sync(() => {
            policies.push(entry)
          }),
          () => Effect.sync(() => remove(policies, entry))
        )
      })

    const service: ApprovalService.Service = {
      answer,
      setPolicy,
      policy: (agent) => Effect.sync(() => effectivePolicy(typeof agent === "string" ? lineageOf(agent) : []))
    }
    return { approval: Approval.make(request), service }
  })

const remove = <A>(list: Array<A>, entry: A): void => {
  const index = list.indexOf(entry)
  if (index >= 0) list.splice(index, 1)
}

/** @internal */
export const layer = <I>(
  tag: Context.Tag<I, ApprovalService.Service>,
  options?: ApprovalService.Options
): Layer.Layer<Approval.Approval | I, never, ToolCallLog.ToolCallLog | ToolRegistry> =>
  Layer.scopedContext(
    Effect.map(make(options), ({ approval, service }) =>
      Context.make(Approval.Approval, approval).pipe(Context.add(tag, service)))
  )
