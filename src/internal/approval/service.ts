/**
 * The audited approval service (APPR-6 without the session precondition, D-7, D-14, D-18).
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
import type * as IdGenerator from "../../IdGenerator.js"
import * as ToolCallLog from "../../ToolCallLog.js"
import type { ApprovalDecider, ApprovalRecord } from "../../ToolCallLog.js"
import { detailOfCause, sanitizeThrown } from "../../ToolError.js"
import { ToolRegistry } from "../../ToolRegistry.js"
import type { Then } from "../base/promise.js"
import { thenOf } from "../base/promise.js"
import { isAbortSignal } from "../base/signals.js"

// ---------------------------------------------------------------------------------------------
// reading what user code hands over
// ---------------------------------------------------------------------------------------------

interface ReadRemember {
  readonly scope: "agent" | "global"
  readonly match: "tool" | "arguments"
  readonly ttl: unknown
}

/** An answer read once: delegate, an outcome (with what to remember), or a value outside the vocabulary. */
type ReadAnswer =
  | { readonly _tag: "Next" }
  | { readonly _tag: "Answer"; readonly outcome: ApprovalOutcome; readonly remember: ReadRemember | undefined }
  | { readonly _tag: "Rogue" }

const NEXT: ReadAnswer = { _tag: "Next" }
const ROGUE: ReadAnswer = { _tag: "Rogue" }

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const readRemember = (remember: unknown): ReadRemember | undefined | "rogue" => {
  if (remember === undefined) return undefined
  if (!isRecord(remember)) return "rogue"
  const scope = remember.scope
  const match = remember.match
  const ttl = remember.ttl
  if (scope !== "agent" && scope !== "global") return "rogue"
  if (match !== "tool" && match !== "arguments") return "rogue"
  return { scope, match, ttl }
}

/** Reads an answerer's answer: each field once; a read that throws is a value outside the vocabulary. */
export const readAnswer = (answer: unknown): ReadAnswer => {
  if (answer === undefined) return NEXT
  if (Approval.isOutcome(answer)) return { _tag: "Answer", outcome: answer, remember: undefined }
  try {
    if (!isRecord(answer)) return ROGUE
    const outcome = answer.outcome
    const remember = answer.remember
    if (!Approval.isOutcome(outcome)) return ROGUE
    const read = readRemember(remember)
    return read === "rogue" ? ROGUE : { _tag: "Answer", outcome, remember: read }
  } catch {
    return ROGUE
  }
}

interface ReadRequest {
  readonly agent: AgentId
  readonly toolName: string
  readonly callId: string
  readonly reason: string | undefined
  readonly argumentsDigest: string
  readonly signal: AbortSignal
}

const INVALID_REQUEST = "an approval request needs string `agent`, `toolName`, `callId` and `argumentsDigest`, " +
  "an optional string `reason` and a real AbortSignal as `signal`"

const readRequest = (request: unknown): ReadRequest | undefined => {
  try {
    if (typeof request !== "object" || request === null) return undefined
    const r = request as Record<string, unknown>
    const agent = r.agent
    const toolName = r.toolName
    const callId = r.callId
    const reason = r.reason
    const argumentsDigest = r.argumentsDigest
    const signal = r.signal
    if (typeof agent !== "string" || typeof toolName !== "string" || typeof callId !== "string") return undefined
    if (typeof argumentsDigest !== "string" || (reason !== undefined && typeof reason !== "string")) return undefined
    if (!isAbortSignal(signal)) return undefined
    return { agent, toolName, callId, reason, argumentsDigest, signal }
  } catch {
    return undefined
  }
}

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

const readTarget = (
  label: string,
  options: unknown
): { readonly agent: AgentId | undefined; readonly prepend: boolean } | string => {
  if (options === undefined) return { agent: undefined, prepend: false }
  try {
    if (typeof options !== "object" || options === null) return `${label} options must be an object`
    const { agent, prepend } = options as { readonly agent?: unknown; readonly prepend?: unknown }
    if (agent !== undefined && typeof agent !== "string") return `${label} option "agent" must be a string`
    if (prepend !== undefined && typeof prepend !== "boolean") return `${label} option "prepend" must be a boolean`
    return { agent, prepend: prepend === true }
  } catch {
    return `${label} options could not be read`
  }
}

// ---------------------------------------------------------------------------------------------
// decisions
// ---------------------------------------------------------------------------------------------

interface Decision {
  readonly outcome: ApprovalOutcome
  readonly by: ApprovalDecider
  readonly remember?: ReadRemember | undefined
}

const ABORTED: Decision = { outcome: "cancelled", by: "abort" }
const NEVER: Decision = { outcome: "rejected", by: "policy" }
const NO_ANSWER: Decision = { outcome: "unavailable", by: "policy" }
const FAILED: Decision = { outcome: "unavailable", by: "error" }

interface Entry<A> {
  readonly owner: AgentId | undefined
  readonly value: A
}

type RunAnswerer = (request: ApprovalRequest) => Effect.Effect<unknown, unknown>

/** Global entries, then the chain's farthest ancestor first, the agent last; each in list order. */
const inScope = <A>(entries: ReadonlyArray<Entry<A>>, lineage: ReadonlyArray<AgentId>): Array<A> => {
  const out: Array<A> = []
  for (const entry of entries) if (entry.owner === undefined) out.push(entry.value)
  for (let i = lineage.length - 1; i >= 0; i--) {
    const agent = lineage[i]
    for (const entry of entries) if (entry.owner === agent) out.push(entry.value)
  }
  return out
}

/** The nearest setting: the agent's own, its ancestors' nearest first, the global one; the latest of each. */
const nearest = <A>(entries: ReadonlyArray<Entry<A>>, lineage: ReadonlyArray<AgentId>): A | undefined => {
  for (const agent of [...lineage, undefined]) {
    for (let i = entries.length - 1; i >= 0; i--) {
      const entry = entries[i]!
      if (entry.owner === agent) return entry.value
    }
  }
  return undefined
}

/**
 * A Promise answer, adopted now: its settlement is observed by plain callbacks attached at once
 * (so a rejection is never unhandled). The returned Effect waits for it, interruptibly; a
 * settlement after the wait was interrupted goes to `late`.
 */
const adoptAnswer = (thenable: unknown, then: Then, late: (read: ReadAnswer) => void): Effect.Effect<ReadAnswer> => {
  let settled: ReadAnswer | undefined = undefined
  let resume: ((effect: Effect.Effect<ReadAnswer>) => void) | undefined = undefined
  let abandoned = false
  const settle = (read: ReadAnswer) => {
    if (settled !== undefined) return
    settled = read
    const waiting = resume
    resume = undefined
    if (waiting !== undefined) waiting(Effect.succeed(read))
    else if (abandoned) late(read)
  }
  try {
    new Promise<unknown>((res, rej) => then.call(thenable, res, rej)).then(
      (value) => settle(readAnswer(value)),
      () => settle(ROGUE)
    )
  } catch {
    settle(ROGUE)
  }
  return Effect.async<ReadAnswer>((cb) => {
    if (settled !== undefined) return cb(Effect.succeed(settled))
    resume = cb
    return Effect.sync(() => {
      resume = undefined
      abandoned = true
    })
  })
}

/** One answerer's answer, read once: a throw, a failure, a defect or a non-answer is `Rogue`. */
const runOne = (
  run: RunAnswerer,
  request: ApprovalRequest,
  late: (read: ReadAnswer) => void
): Effect.Effect<ReadAnswer> =>
  Effect.suspend(() => {
    let out: unknown
    try {
      out = run(request)
    } catch {
      return Effect.succeed(ROGUE)
    }
    if (Effect.isEffect(out)) {
      return Effect.matchCause(out as Effect.Effect<unknown, unknown>, { onFailure: () => ROGUE, onSuccess: readAnswer })
    }
    const then = thenOf(out)
    return then === undefined ? Effect.succeed(ROGUE) : adoptAnswer(out, then, late)
  })

type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/**
 * The answerer chain: the first answer wins, `undefined` delegates, a failure or a rogue value
 * stops at `unavailable`. Each answerer runs under `restore` (interruptible); what it answered
 * is handled uninterruptibly, so an answer that completed in the same step as an abort is still
 * settled (as a late answer). A Promise answer that settles after the chain was interrupted goes
 * to `late`. `undefined` when the chain was interrupted, or stopped by the abort.
 */
const runChain = (
  answerers: ReadonlyArray<RunAnswerer>,
  request: ApprovalRequest,
  restore: Restore,
  stopped: () => boolean,
  late: (read: ReadAnswer) => void
): Effect.Effect<Decision | undefined> => {
  const step = (index: number): Effect.Effect<Decision | undefined> => {
    if (index >= answerers.length) return Effect.succeed(NO_ANSWER)
    return Effect.flatMap(Effect.exit(restore(runOne(answerers[index]!, request, late))), (exit) => {
      if (Exit.isFailure(exit)) return Effect.succeed(undefined)
      const read = exit.value
      switch (read._tag) {
        case "Next":
          return stopped() ? Effect.succeed(undefined) : step(index + 1)
        case "Rogue":
          return Effect.succeed(FAILED)
        case "Answer":
          return Effect.succeed<Decision>({ outcome: read.outcome, by: "answerer", remember: read.remember })
      }
    })
  }
  return step(0)
}

// ---------------------------------------------------------------------------------------------
// the service
// ---------------------------------------------------------------------------------------------

const addListener = EventTarget.prototype.addEventListener
const removeListener = EventTarget.prototype.removeEventListener
const abortedGetter = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")!.get!

const randomIds: IdGenerator.Service = { next: () => globalThis.crypto.randomUUID() }

const readOptions = (
  options: unknown
): { readonly policy: ApprovalService.Policy; readonly ids: IdGenerator.Service } | string => {
  if (options === undefined) return { policy: "ask", ids: randomIds }
  try {
    if (typeof options !== "object" || options === null) return "ApprovalService.layer options must be an object"
    const { ids, policy } = options as { readonly policy?: unknown; readonly ids?: unknown }
    if (policy !== undefined && policy !== "ask" && policy !== "never") {
      return "ApprovalService.layer option \"policy\" must be \"ask\" or \"never\""
    }
    if (ids === undefined) return { policy: policy ?? "ask", ids: randomIds }
    const next = typeof ids === "object" && ids !== null ? (ids as { readonly next?: unknown }).next : undefined
    if (typeof next !== "function") return "ApprovalService.layer option \"ids\" must be an IdGenerator service"
    return {
      policy: policy ?? "ask",
      ids: {
        next: () => {
          let id: unknown
          try {
            id = next.call(ids)
          } catch {
            return randomIds.next()
          }
          return typeof id === "string" ? id : randomIds.next()
        }
      }
    }
  } catch {
    return "ApprovalService.layer options could not be read"
  }
}

const warnAudit = (id: string, tag: ApprovalRecord["_tag"], cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  Effect.logWarning(
    `approval ${id}: the audit record ${tag} could not be written (the decision stands): ${detailOfCause(cause).message}`
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

    const audit = (record: ApprovalRecord): Effect.Effect<void> =>
      Effect.catchAllCause(Effect.suspend(() => log.append(record)), (cause) => warnAudit(record.id, record._tag, cause))

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
          Effect.zipRight(Deferred.await(written), audit({ _tag: "approval/late", id, outcome, by }))
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
          const id = read.ids.next()
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
          yield* audit(asked)
          const written = yield* Deferred.make<void>()
          const lineage = lineageOf(checked.agent)
          let decision: Decision
          if (abortedGetter.call(checked.signal) === true) decision = ABORTED
          else if (effectivePolicy(lineage) === "never") decision = NEVER
          else decision = yield* askAnswerers(id, request, checked, lineage, restore, written)
          const remembered = yield* remember(checked, decision)
          yield* audit(
            remembered === undefined
              ? { _tag: "approval/decided", id, outcome: decision.outcome, by: decision.by }
              : { _tag: "approval/decided", id, outcome: decision.outcome, by: decision.by, remembered }
          )
          yield* Deferred.succeed(written, undefined)
          return decision.outcome
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
