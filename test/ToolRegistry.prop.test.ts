import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, FastCheck, Option, Scope } from "effect"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import type * as Tool from "../src/Tool.js"
import type * as ToolRegistry from "../src/ToolRegistry.js"

// A small pure model of SCOPE-2 / REG-4 / REG-5, checked against the registry after every step.

const AGENTS = ["A", "B", "C", "D"] as const
const NAMES = ["a", "b", "c", "d", "e"] as const

type Def = Tool.ToolDefinition<never>

let serial = 0

/** A definition with a unique description: the registry stores a snapshot, so `get` is compared by it. */
const def = (name: string): Def => ({
  name,
  description: `${name}#${serial++}`,
  parameters: { type: "object" },
  output: { schema: { type: "string" }, render: () => [] },
  execute: () => Effect.succeed(name)
})

type Op =
  | { readonly _tag: "register"; readonly layer: number; readonly name: string }
  | {
    readonly _tag: "restrict"
    readonly agent: number
    readonly allow: ReadonlyArray<string> | undefined
    readonly deny: ReadonlyArray<string> | undefined
  }
  | { readonly _tag: "close"; readonly index: number }

interface Contribution {
  readonly layer: string | undefined
  readonly scope: Scope.CloseableScope
  readonly tool?: { readonly name: string; readonly def: Def }
  readonly filter?: { readonly allow: ReadonlySet<string> | undefined; readonly deny: ReadonlySet<string> | undefined }
  open: boolean
}

const names = FastCheck.subarray([...NAMES])

const opArb: FastCheck.Arbitrary<Op> = FastCheck.oneof(
  { weight: 4, arbitrary: FastCheck.record({
    _tag: FastCheck.constant("register" as const),
    layer: FastCheck.integer({ min: 0, max: AGENTS.length }),
    name: FastCheck.constantFrom(...NAMES)
  }) },
  { weight: 2, arbitrary: FastCheck.record({
    _tag: FastCheck.constant("restrict" as const),
    agent: FastCheck.integer({ min: 0, max: AGENTS.length - 1 }),
    allow: FastCheck.option(names, { nil: undefined }),
    deny: FastCheck.option(names, { nil: undefined })
  }) },
  { weight: 3, arbitrary: FastCheck.record({
    _tag: FastCheck.constant("close" as const),
    index: FastCheck.nat()
  }) }
)

/** parent index per agent (-1 = none), restricted to earlier agents so the tree is acyclic. */
const parentsArb = FastCheck.tuple(
  FastCheck.constant(-1),
  FastCheck.integer({ min: -1, max: 0 }),
  FastCheck.integer({ min: -1, max: 1 }),
  FastCheck.integer({ min: -1, max: 2 })
)

/** Caps the tree at depth 3 (chains of at most three agents). */
const normalizeParents = (raw: ReadonlyArray<number>): Array<number> => {
  const parents: Array<number> = []
  const depth: Array<number> = []
  raw.forEach((parent, i) => {
    const p = parent >= 0 && depth[parent] < 2 ? parent : -1
    parents[i] = p
    depth[i] = p < 0 ? 0 : depth[p] + 1
  })
  return parents
}

const chainOf = (parents: ReadonlyArray<number>, agent: string): Array<string> => {
  const chain: Array<string> = []
  let index = AGENTS.indexOf(agent as typeof AGENTS[number])
  while (index >= 0) {
    chain.unshift(AGENTS[index])
    index = parents[index]
  }
  return chain
}

const layerTools = (contributions: ReadonlyArray<Contribution>, layer: string | undefined) =>
  contributions.filter((c) => c.open && c.tool !== undefined && c.layer === layer).map((c) => c.tool!)

const upsert = (list: Array<{ name: string; def: Def }>, entry: { readonly name: string; readonly def: Def }) => {
  const at = list.findIndex((e) => e.name === entry.name)
  if (at >= 0) list[at] = { ...entry }
  else list.push({ ...entry })
}

const modelInherited = (contributions: ReadonlyArray<Contribution>, parents: ReadonlyArray<number>, agent: string) => {
  const inherited = layerTools(contributions, undefined).map((e) => ({ ...e }))
  const chain = chainOf(parents, agent)
  for (const layer of chain.slice(0, -1)) for (const entry of layerTools(contributions, layer)) upsert(inherited, entry)
  return inherited
}

const modelView = (
  contributions: ReadonlyArray<Contribution>,
  parents: ReadonlyArray<number>,
  agent: string | undefined
): Array<{ name: string; def: Def }> => {
  if (agent === undefined) return layerTools(contributions, undefined).map((e) => ({ ...e }))
  const chain = chainOf(parents, agent)
  const filters = contributions.filter((c) => c.open && c.filter !== undefined && chain.includes(c.layer!))
  const visible = modelInherited(contributions, parents, agent).filter((entry) =>
    filters.every(({ filter }) =>
      (filter!.allow === undefined || filter!.allow.has(entry.name)) &&
      (filter!.deny === undefined || !filter!.deny.has(entry.name))
    )
  )
  for (const entry of layerTools(contributions, agent)) upsert(visible, entry)
  return visible
}

const checkAgainstModel = (
  registry: ToolRegistry.Service,
  contributions: ReadonlyArray<Contribution>,
  parents: ReadonlyArray<number>
) =>
  Effect.gen(function*() {
    for (const agent of [undefined, ...AGENTS]) {
      const expected = modelView(contributions, parents, agent)
      const schemas = yield* registry.schemas(agent)
      const actualNames = schemas.map((schema) => schema.name)
      const expectedNames = expected.map((e) => e.name)
      if (actualNames.join() !== expectedNames.join()) assert.deepStrictEqual(actualNames, expectedNames)
      for (const name of NAMES) {
        const found = Option.getOrUndefined(yield* registry.get(name, agent))
        const model = expected.find((e) => e.name === name)?.def
        if (found?.description !== model?.description) assert.fail(`get("${name}", ${agent}) differs from the model`)
      }
    }
  })

describe("ToolRegistry model (SCOPE-2, REG-4/5, HOST-5)", () => {
  it.live.prop(
    "SCOPE-2: get and schemas equal the model after every register / restrict / close step",
    { rawParents: parentsArb, ops: FastCheck.array(opArb, { maxLength: 25 }) },
    ({ ops, rawParents }) =>
      Effect.gen(function*() {
        const parents = normalizeParents(rawParents)
        const registry = yield* InMemoryToolRegistry.make()
        for (let i = 0; i < AGENTS.length; i++) {
          yield* registry.declareAgent(AGENTS[i], parents[i] < 0 ? undefined : { parent: AGENTS[parents[i]] })
        }
        const contributions: Array<Contribution> = []
        for (const op of ops) {
          if (op._tag === "register") {
            const layer = op.layer === 0 ? undefined : AGENTS[op.layer - 1]
            const duplicate = layerTools(contributions, layer).some((e) => e.name === op.name)
            const scope = yield* Scope.make()
            const definition = def(op.name)
            const exit = yield* Effect.exit(
              Scope.extend(registry.register(definition, layer === undefined ? {} : { agent: layer }), scope)
            )
            assert.strictEqual(Exit.isFailure(exit), duplicate, `register ${op.name} in ${layer}`)
            if (Exit.isSuccess(exit)) {
              contributions.push({ layer, scope, tool: { name: op.name, def: definition }, open: true })
            }
          } else if (op._tag === "restrict") {
            const agent = AGENTS[op.agent]
            const known = new Set(modelInherited(contributions, parents, agent).map((e) => e.name))
            const named = [...(op.allow ?? []), ...(op.deny ?? [])]
            const refused = (op.allow === undefined && op.deny === undefined) || named.some((n) => !known.has(n))
            const scope = yield* Scope.make()
            const exit = yield* Effect.exit(
              Scope.extend(registry.restrict({ allow: op.allow, deny: op.deny }, { agent }), scope)
            )
            assert.strictEqual(Exit.isFailure(exit), refused, `restrict ${agent}`)
            if (Exit.isSuccess(exit)) {
              const filter = {
                allow: op.allow === undefined ? undefined : new Set(op.allow),
                deny: op.deny === undefined ? undefined : new Set(op.deny)
              }
              contributions.push({ layer: agent, scope, filter, open: true })
            }
          } else {
            const open = contributions.filter((c) => c.open)
            if (open.length > 0) {
              const target = open[op.index % open.length]
              target.open = false
              yield* Scope.close(target.scope, Exit.void)
            }
          }
          yield* checkAgainstModel(registry, contributions, parents)
        }
      }).pipe(Effect.scoped),
    { fastCheck: { numRuns: 120 } }
  )
})
