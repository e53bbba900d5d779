/**
 * Remembered approval grants (issue 10 item 3), what does not depend on the backend: hostile
 * input read once and refused with typed errors (never a throw or a defect), the matching order
 * against an independent oracle (a property), and `make` over a custom store. The behavioural
 * suite for every backend is in `ApprovalGrants.backends.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, FastCheck, Option } from "effect"
import * as ApprovalGrants from "../src/ApprovalGrants.js"
import type { Grant, GrantInput, Query, Store } from "../src/ApprovalGrants.js"
import * as Hostile from "./fixtures/hostile.js"

const D1 = "1".repeat(64)
const D2 = "2".repeat(64)
const TEXT = "a non-empty string of well-formed Unicode without NUL characters"

/** Runs `f` against a fresh memory service. */
const withMemory = <A, E>(f: (grants: ApprovalGrants.Service) => Effect.Effect<A, E>) =>
  Effect.flatMap(ApprovalGrants.makeMemory, f)

/** The exit of `effect`, as a failure message, a success tag, or the word "defect". */
const outcome = <A>(effect: Effect.Effect<A, ApprovalGrants.ApprovalGrantsError>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    if (Exit.isSuccess(exit)) return "ok"
    const failure = Cause.failureOption(exit.cause)
    if (Option.isNone(failure)) return "defect"
    assert.instanceOf(failure.value, ApprovalGrants.ApprovalGrantsError)
    return failure.value.message
  })

const revokedArray = (): unknown => {
  const { proxy, revoke } = Proxy.revocable([], {})
  revoke()
  return proxy
}

describe("ApprovalGrants: hostile input", () => {
  it.effect("grant: every hostile value as the input is a typed failure or, when it carries fields, a grant", () =>
    withMemory((grants) =>
      Effect.gen(function*() {
        const expected: Record<Hostile.Kind, string> = {
          "throwing proxy": "approval grant input could not be read: hostile get",
          "revoked proxy": "approval grant input could not be read: Cannot perform 'IsArray' on a proxy that has been revoked",
          "null prototype": `approval grant toolName must be ${TEXT}, not undefined`,
          "null prototype with fields": "ok",
          "cyclic": "ok",
          "bigint": "ok",
          "bare bigint": "approval grant input must be an object, not a bigint",
          "symbol": "approval grant input must be an object, not a symbol",
          "function": "approval grant input must be an object, not a function",
          "__proto__ key": "ok",
          "throwing conversions": "ok",
          "throwing proxy over an array": "approval grant input must be an object, not an array"
        }
        for (const kind of Hostile.kinds) {
          const input = Hostile.make(kind, { toolName: `t-${kind}` }) as GrantInput
          assert.strictEqual(yield* outcome(grants.grant(input)), expected[kind], kind)
        }
        const stored = (yield* grants.list).map((g) => g.toolName)
        assert.deepStrictEqual(stored, [
          "t-null prototype with fields",
          "t-cyclic",
          "t-bigint",
          "t-__proto__ key",
          "t-throwing conversions"
        ])
        assert.strictEqual(({} as Record<string, unknown>).polluted, undefined)
      })
    ))

  it.effect("grant: every hostile value in a field is refused with the field named", () =>
    withMemory((grants) =>
      Effect.gen(function*() {
        for (const kind of Hostile.kinds) {
          for (const field of ["toolName", "agent", "argumentsDigest", "ttl"] as const) {
            const input = { toolName: "read", [field]: Hostile.make(kind) } as GrantInput
            const exit = yield* Effect.exit(grants.grant(input))
            if (kind === "bare bigint" && field === "ttl") {
              assert.isTrue(Exit.isSuccess(exit) && exit.value.expiresAt === 1, "7n nanoseconds is a valid ttl")
              continue
            }
            assert.isTrue(Exit.isFailure(exit), `${kind} as ${field}`)
            const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
            assert.isTrue(Option.isSome(failure), `${kind} as ${field} is a typed failure`)
            if (Option.isSome(failure)) {
              assert.deepStrictEqual(failure.value.reason, { _tag: "InvalidInput", field }, `${kind} as ${field}`)
            }
          }
        }
        assert.deepStrictEqual((yield* grants.list).map((g) => g.expiresAt), [1])
      })
    ))

  it.effect("grant: hostile ttls give their exact messages", () =>
    withMemory((grants) =>
      Effect.gen(function*() {
        const rule = "approval grant ttl must be a positive, finite duration"
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [Hostile.throwingProxy(), "approval grant ttl could not be read: hostile has"],
          [Hostile.revokedProxy(), "approval grant ttl could not be read: Cannot perform 'IsArray' on a proxy that has been revoked"],
          [Hostile.throwingProxy([]), "approval grant ttl could not be read: hostile get"],
          [Hostile.nullProto(), `${rule}, not an object`],
          [Hostile.throwingConversions(), `${rule}, not an object`],
          [Symbol("s"), `${rule}, not a symbol`],
          ["x".repeat(100), `${rule}, not "${"x".repeat(40)}…"`]
        ]
        for (const [ttl, message] of cases) {
          assert.strictEqual(yield* outcome(grants.grant({ toolName: "read", ttl: ttl as number })), message)
        }
      })
    ))

  it.effect("grant: each field is read exactly once; a changing getter is seen as its first value", () =>
    withMemory((grants) =>
      Effect.gen(function*() {
        const { reads, value } = Hostile.counted({ toolName: "read", agent: "main", argumentsDigest: D1, ttl: 1000 })
        const g = yield* grants.grant(value as GrantInput)
        assert.deepStrictEqual(Object.fromEntries(reads), { toolName: 1, agent: 1, argumentsDigest: 1, ttl: 1 })
        assert.deepStrictEqual(g, { id: "grant-1", toolName: "read", agent: "main", argumentsDigest: D1, createdAt: 0, expiresAt: 1000 })
        const changing = Hostile.changing({ toolName: "read" }, "agent", "main", "intruder") as GrantInput
        const h = yield* grants.grant(changing)
        assert.strictEqual(h.agent, "main")
        let elementReads = 0
        const ttl = new Proxy([2, 0], {
          get: (target, key, receiver) => {
            if (key === "0" || key === "1") elementReads++
            return Reflect.get(target, key, receiver)
          }
        })
        const t = yield* grants.grant({ toolName: "read", ttl: ttl as unknown as readonly [number, number] })
        assert.strictEqual(t.expiresAt, 2000)
        assert.strictEqual(elementReads, 2)
      })
    ))

  it.effect("find: hostile queries and lineages are typed failures with exact messages", () =>
    withMemory((grants) =>
      Effect.gen(function*() {
        const lineageRule = "approval grant query lineage must be an array of at most 10000 agent ids"
        const hugeLength = new Proxy([], {
          get: (target, key, receiver) => (key === "length" ? 1e9 : Reflect.get(target, key, receiver))
        })
        const throwingElement = ["a"]
        Object.defineProperty(throwingElement, 1, {
          enumerable: true,
          get: () => {
            throw new Error("hostile element")
          }
        })
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [null, "approval grant query must be an object, not null"],
          ["read", "approval grant query must be an object, not a string"],
          [Hostile.throwingProxy(), "approval grant query could not be read: hostile get"],
          [Hostile.revokedProxy(), "approval grant query could not be read: Cannot perform 'IsArray' on a proxy that has been revoked"],
          [{ toolName: "t", lineage: Hostile.throwingProxy([]), argumentsDigest: D1 }, "approval grant query lineage could not be read: hostile get"],
          [{ toolName: "t", lineage: revokedArray(), argumentsDigest: D1 }, "approval grant query lineage could not be read: Cannot perform 'IsArray' on a proxy that has been revoked"],
          [{ toolName: "t", lineage: hugeLength, argumentsDigest: D1 }, `${lineageRule}, not an array of 1000000000 entries`],
          [{ toolName: "t", lineage: throwingElement, argumentsDigest: D1 }, "approval grant query lineage[1] could not be read: hostile element"],
          [{ toolName: "t", lineage: [Hostile.revokedProxy()], argumentsDigest: D1 }, `approval grant query lineage[0] must be ${TEXT}, not an object`],
          [{ toolName: "t", lineage: [, "a"], argumentsDigest: D1 }, `approval grant query lineage[0] must be ${TEXT}, not undefined`],
          [{ toolName: "t", lineage: Hostile.nullProto(), argumentsDigest: D1 }, `${lineageRule}, not an object`],
          [{ toolName: 7n, lineage: [], argumentsDigest: D1 }, `approval grant query toolName must be ${TEXT}, not a bigint`],
          [{ toolName: "t", lineage: [], argumentsDigest: "" }, `approval grant query argumentsDigest must be ${TEXT}, not an empty string`]
        ]
        for (const [query, message] of cases) {
          assert.strictEqual(yield* outcome(grants.find(query as Query)), message)
        }
      })
    ))

  it.effect("find: a query is read once into a copy; a null-prototype query with a __proto__ key works", () =>
    withMemory((grants) =>
      Effect.gen(function*() {
        const g = yield* grants.grant({ toolName: "read", agent: "parent" })
        const { reads, value } = Hostile.counted({ toolName: "read", lineage: ["child", "parent"], argumentsDigest: D1 })
        assert.deepStrictEqual(yield* grants.find(value as Query), Option.some(g))
        assert.deepStrictEqual(Object.fromEntries(reads), { toolName: 1, lineage: 1, argumentsDigest: 1 })
        const query = Object.assign(Hostile.nullProto({ toolName: "read", argumentsDigest: D1 }), Hostile.ownProtoKey(), {
          lineage: ["parent"]
        })
        assert.deepStrictEqual(yield* grants.find(query as unknown as Query), Option.some(g))
        const lineage = ["child", "parent"]
        const found = yield* grants.find({ toolName: "read", lineage, argumentsDigest: D1 })
        lineage.length = 0
        assert.deepStrictEqual(found, Option.some(g))
      })
    ))

  it.effect("revoke: a non-string id is a typed failure, hostile ones included", () =>
    withMemory((grants) =>
      Effect.gen(function*() {
        for (const kind of Hostile.kinds) {
          const message = yield* outcome(grants.revoke(Hostile.make(kind) as string))
          assert.match(message, /^approval grant id must be a string, not /, kind)
        }
      })
    ))
})

// ---------------------------------------------------------------------------------------------
// matching order, against an oracle
// ---------------------------------------------------------------------------------------------

const agents = ["root", "parent", "child", "sibling"] as const
const lineages: ReadonlyArray<ReadonlyArray<string>> = [
  [],
  ["root"],
  ["parent", "root"],
  ["child", "parent", "root"],
  ["sibling", "root"]
]

const grantArb = FastCheck.record({
  toolName: FastCheck.constantFrom("a", "b"),
  agent: FastCheck.option(FastCheck.constantFrom(...agents), { nil: undefined }),
  argumentsDigest: FastCheck.option(FastCheck.constantFrom(D1, D2), { nil: undefined }),
  expiresAt: FastCheck.option(FastCheck.integer({ min: 1, max: 30 }), { nil: undefined })
})

const queryArb = FastCheck.record({
  toolName: FastCheck.constantFrom("a", "b"),
  lineage: FastCheck.constantFrom(...lineages),
  argumentsDigest: FastCheck.constantFrom(D1, D2)
})

/** The oracle: sort the matches by (agent distance, tool-over-digest, creation) and take the first. */
const oracle = (grants: ReadonlyArray<Grant>, query: Query, now: number): string => {
  const keyed = grants.flatMap((g, created) => {
    if (g.toolName !== query.toolName) return []
    if (g.expiresAt !== undefined && g.expiresAt <= now) return []
    if (g.argumentsDigest !== undefined && g.argumentsDigest !== query.argumentsDigest) return []
    const distance = g.agent === undefined ? Number.MAX_SAFE_INTEGER : query.lineage.indexOf(g.agent)
    if (distance < 0) return []
    return [{ id: g.id, key: [distance, g.argumentsDigest === undefined ? 1 : 0, created] as const }]
  })
  keyed.sort((x, y) => x.key[0] - y.key[0] || x.key[1] - y.key[1] || x.key[2] - y.key[2])
  return keyed[0]?.id ?? "none"
}

const idOf = Option.match({ onNone: () => "none", onSome: (g: Grant) => g.id })

const asGrant = (
  fields: { readonly toolName: string; readonly agent?: string | undefined; readonly argumentsDigest?: string | undefined; readonly expiresAt?: number | undefined },
  index: number
): Grant => ({
  id: `g${index}`,
  toolName: fields.toolName,
  createdAt: 0,
  ...(fields.agent === undefined ? {} : { agent: fields.agent }),
  ...(fields.argumentsDigest === undefined ? {} : { argumentsDigest: fields.argumentsDigest }),
  ...(fields.expiresAt === undefined ? {} : { expiresAt: fields.expiresAt })
})

describe("ApprovalGrants: matching", () => {
  it.prop(
    "select: the most specific live match (nearest agent, digest over tool, earliest), as an oracle says",
    {
      grants: FastCheck.array(grantArb, { maxLength: 14 }),
      query: queryArb,
      now: FastCheck.integer({ min: 0, max: 35 })
    },
    ({ grants, now, query }) => {
      const stored = grants.map(asGrant)
      assert.strictEqual(idOf(ApprovalGrants.select(stored, query, now)), oracle(stored, query, now))
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.live.prop(
    "find on the memory service agrees with the oracle over the grants left after revocations",
    {
      grants: FastCheck.array(FastCheck.tuple(grantArb, FastCheck.integer({ min: 0, max: 5 })), { maxLength: 10 }),
      queries: FastCheck.array(queryArb, { minLength: 1, maxLength: 5 })
    },
    ({ grants, queries }) =>
      withMemory((service) =>
        Effect.gen(function*() {
          const kept: Array<Grant> = []
          for (const [input, die] of grants) {
            const g = yield* service.grant({
              toolName: input.toolName,
              agent: input.agent,
              argumentsDigest: input.argumentsDigest
            })
            if (die === 0) assert.isTrue(yield* service.revoke(g.id))
            else kept.push(g)
          }
          assert.deepStrictEqual(yield* service.list, kept)
          for (const query of queries) {
            assert.strictEqual(idOf(yield* service.find(query)), oracle(kept, query, 0))
          }
        })
      ),
    { fastCheck: { numRuns: 150 } }
  )
})

// ---------------------------------------------------------------------------------------------
// make over a custom store
// ---------------------------------------------------------------------------------------------

describe("ApprovalGrants.make", () => {
  it.effect("filters a store's superset of candidates itself, and prunes before it stores", () =>
    Effect.gen(function*() {
      const calls: Array<string> = []
      const stored: Array<Grant> = []
      const store: Store = {
        nextId: Effect.sync(() => `id-${stored.length}`),
        insert: (g) => Effect.sync(() => void (calls.push(`insert ${g.id}`), stored.push(g))),
        candidates: () => Effect.sync(() => stored),
        all: Effect.sync(() => stored),
        remove: () => Effect.succeed(false),
        prune: (now) => Effect.sync(() => void calls.push(`prune ${now}`))
      }
      const grants = ApprovalGrants.make(store)
      yield* grants.grant({ toolName: "other" })
      yield* grants.grant({ toolName: "read", agent: "sibling" })
      yield* grants.grant({ toolName: "read", argumentsDigest: D2 })
      assert.deepStrictEqual(calls, ["prune 0", "insert id-0", "prune 0", "insert id-1", "prune 0", "insert id-2"])
      assert.deepStrictEqual(yield* grants.find({ toolName: "read", lineage: ["child"], argumentsDigest: D1 }), Option.none())
      const g = yield* grants.grant({ toolName: "read" })
      assert.deepStrictEqual(yield* grants.find({ toolName: "read", lineage: ["child"], argumentsDigest: D1 }), Option.some(g))
    }))

  it.effect("a store's failure reaches the caller as the store's ApprovalGrantsError", () =>
    Effect.gen(function*() {
      const error = new ApprovalGrants.ApprovalGrantsError({ message: "approval grants could not be read: disk" })
      const store: Store = {
        ...(yield* ApprovalGrants.makeMemoryStore),
        candidates: () => Effect.fail(error)
      }
      const failure = yield* Effect.flip(ApprovalGrants.make(store).find({ toolName: "t", lineage: [], argumentsDigest: D1 }))
      assert.instanceOf(failure, ApprovalGrants.ApprovalGrantsError)
      assert.strictEqual(failure.message, "approval grants could not be read: disk")
      assert.strictEqual(failure.reason, undefined)
    }))

  it.effect("memory ids count per layer build: grant-1, grant-2, … and again from grant-1", () =>
    Effect.gen(function*() {
      const first = yield* withMemory((grants) => Effect.all([grants.grant({ toolName: "a" }), grants.grant({ toolName: "b" })]))
      const second = yield* withMemory((grants) => grants.grant({ toolName: "a" }))
      assert.deepStrictEqual(first.map((g) => g.id), ["grant-1", "grant-2"])
      assert.strictEqual(second.id, "grant-1")
    }))

  it.effect("the error serialises: a tagged, schema-described value with message and reason", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(withMemory((grants) => grants.grant({ toolName: "" })))
      assert.deepStrictEqual(JSON.parse(JSON.stringify(error)), {
        _tag: "ApprovalGrantsError",
        message: `approval grant toolName must be ${TEXT}, not an empty string`,
        reason: { _tag: "InvalidInput", field: "toolName" }
      })
    }))
})
