/**
 * Grants over a store: matching (the most specific live grant for a query), the service every
 * backend shares (checking, `Clock` time, expiry, pruning) and the in-memory store.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { Grant, GrantInput, Query, Service, Store } from "../../ApprovalGrants.js"
import type { ApprovalGrantsError } from "./grantsError.js"
import { invalid, type ReadInput, readGrantInput, readId, readQuery, TTL_RULE } from "./grantsInput.js"

/** @internal */
export const isLive = (grant: Grant, now: number): boolean => grant.expiresAt === undefined || now < grant.expiresAt

/**
 * How specific a matching grant is for a query (lower is more specific), or `undefined` when it
 * does not match. Liveness is not considered.
 */
const rank = (grant: Grant, query: Query): number | undefined => {
  if (grant.toolName !== query.toolName) return undefined
  let agentRank = query.lineage.length
  if (grant.agent !== undefined) {
    agentRank = query.lineage.indexOf(grant.agent)
    if (agentRank < 0) return undefined
  }
  if (grant.argumentsDigest !== undefined && grant.argumentsDigest !== query.argumentsDigest) return undefined
  return agentRank * 2 + (grant.argumentsDigest === undefined ? 1 : 0)
}

/** @internal */
export const select = (grants: Iterable<Grant>, query: Query, now: number): Option.Option<Grant> => {
  let best: Grant | undefined
  let bestRank = Infinity
  for (const grant of grants) {
    if (!isLive(grant, now)) continue
    const r = rank(grant, query)
    if (r !== undefined && r < bestRank) {
      best = grant
      bestRank = r
    }
  }
  return Option.fromNullable(best)
}

/**
 * The grant record for checked input, created at `now` (epoch ms).
 */
const build = (id: string, input: ReadInput, now: number): Either.Either<Grant, ApprovalGrantsError> => {
  const grant: { -readonly [K in keyof Grant]: Grant[K] } = { id, toolName: input.toolName, createdAt: now }
  if (input.agent !== undefined) grant.agent = input.agent
  if (input.argumentsDigest !== undefined) grant.argumentsDigest = input.argumentsDigest
  if (input.ttl !== undefined) {
    const expiresAt = now + input.ttl
    if (!Number.isSafeInteger(expiresAt)) {
      return Either.left(invalid("ttl", `${TTL_RULE}, not one that ends after the largest safe timestamp`))
    }
    grant.expiresAt = expiresAt
  }
  return Either.right(Object.freeze(grant))
}

/** @internal */
export const make = (store: Store): Service => {
  const grant = Effect.fn("ApprovalGrants.grant")(function*(input: GrantInput) {
    const read = yield* readGrantInput(input)
    const now = yield* Clock.currentTimeMillis
    yield* store.prune(now)
    const id = yield* store.nextId
    const created = yield* build(id, read, now)
    yield* store.insert(created)
    return created
  })
  const find = Effect.fn("ApprovalGrants.find")(function*(query: Query) {
    const read = yield* readQuery(query)
    const candidates = yield* store.candidates(read)
    const now = yield* Clock.currentTimeMillis
    return select(candidates, read, now)
  })
  const revoke = Effect.fn("ApprovalGrants.revoke")(function*(id: string) {
    const read = yield* readId(id)
    const now = yield* Clock.currentTimeMillis
    return yield* store.remove(read, now)
  })
  const list = Effect.flatMap(store.all, (grants) =>
    Effect.map(Clock.currentTimeMillis, (now) => Object.freeze(grants.filter((g) => isLive(g, now)))))
  return { grant, find, revoke, list }
}

/** @internal */
export const makeMemoryStore: Effect.Effect<Store> = Effect.sync(() => {
  const grants: Array<Grant> = []
  let counter = 0
  const prune = (now: number) => {
    let kept = 0
    for (const grant of grants) if (isLive(grant, now)) grants[kept++] = grant
    grants.length = kept
  }
  return {
    nextId: Effect.sync(() => `grant-${++counter}`),
    insert: (grant) =>
      Effect.sync(() => {
        grants.push(grant)
      }),
    candidates: (query) => Effect.sync(() => grants.filter((g) => g.toolName === query.toolName)),
    all: Effect.sync(() => grants.slice()),
    remove: (id, now) =>
      Effect.sync(() => {
        const index = grants.findIndex((g) => g.id === id)
        if (index < 0) return false
        const [removed] = grants.splice(index, 1)
        return isLive(removed!, now)
      }),
    prune: (now) => Effect.sync(() => prune(now))
  }
})
