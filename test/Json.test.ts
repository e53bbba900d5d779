import { assert, describe, it } from "@effect/vitest"
import * as vm from "node:vm"
import * as Json from "../src/Json.js"

const NOT_LOSSLESS = { _tag: "NotLossless" }
const DEEP = 100_000

const lossless = (value: unknown): Json.JsonValue => {
  const result = Json.snapshot(value)
  if (result._tag !== "Lossless") assert.fail(`expected Lossless, got ${result._tag}`)
  return result.value
}

const assertRejected = (value: unknown): void => {
  assert.deepStrictEqual(Json.snapshot(value), NOT_LOSSLESS)
  assert.deepStrictEqual(Json.snapshotFrozen(value), NOT_LOSSLESS)
  assert.strictEqual(Json.isLossless(value), false)
}

const assertThrew = (value: unknown, error?: unknown): unknown => {
  const result = Json.snapshot(value)
  if (result._tag !== "Threw") return assert.fail(`expected Threw, got ${result._tag}`)
  if (error !== undefined) assert.strictEqual(result.error, error)
  return result.error
}

const nestArrays = (depth: number, leaf: unknown): unknown => {
  let value: unknown = leaf
  for (let i = 0; i < depth; i++) value = [value]
  return value
}

const nestObjects = (depth: number, leaf: unknown): unknown => {
  let value: unknown = leaf
  for (let i = 0; i < depth; i++) value = { a: value }
  return value
}

const descend = (value: unknown, depth: number, step: (node: any) => unknown): unknown => {
  let node = value
  for (let i = 0; i < depth; i++) node = step(node)
  return node
}

class Point {
  constructor(readonly x: number) {}
}
class MyArray extends Array<number> {}

const rejectedKinds: ReadonlyArray<readonly [string, () => unknown]> = [
  ["undefined", () => undefined],
  ["bigint", () => 1n],
  ["symbol", () => Symbol("s")],
  ["function", () => () => 1],
  ["NaN", () => NaN],
  ["Infinity", () => Infinity],
  ["-Infinity", () => -Infinity],
  ["-0", () => -0],
  ["sparse array", () => [1, , 3]],
  ["trailing hole", () => {
    const array = [1, 2]
    array.length = 3
    return array
  }],
  ["array with extra own property", () => Object.assign([1], { extra: 1 })],
  ["array with non-enumerable extra property", () => Object.defineProperty([1], "hidden", { value: 1 })],
  ["array with symbol property", () => Object.assign([1], { [Symbol("s")]: 1 })],
  ["array subclass", () => MyArray.from([1, 2])],
  ["forged array prototype", () => Object.create(Array.prototype)],
  ["array with custom prototype", () => Object.setPrototypeOf([1], Object.create(Array.prototype))],
  ["class instance", () => new Point(1)],
  ["object with inherited prototype", () => Object.create({ inherited: 1 })],
  ["Date", () => new Date(0)],
  ["Map", () => new Map([["a", 1]])],
  ["Set", () => new Set([1])],
  ["RegExp", () => /x/],
  ["Error", () => new Error("e")],
  ["Promise", () => Promise.resolve(1)],
  ["boxed number", () => new Number(1)],
  ["boxed string", () => new String("x")],
  ["boxed boolean", () => new Boolean(true)],
  ["boxed bigint", () => Object(1n)],
  ["Uint8Array", () => new Uint8Array([1])],
  ["Float64Array", () => new Float64Array(0)],
  ["ArrayBuffer", () => new ArrayBuffer(1)],
  ["symbol key", () => ({ a: 1, [Symbol("s")]: 2 })],
  ["non-enumerable own key", () => Object.defineProperty({ a: 1 }, "hidden", { value: 2 })],
  ["own toJSON function", () => ({ toJSON: () => "x" })],
  ["setter-only accessor", () => Object.defineProperty({}, "a", { set: () => {}, enumerable: true })],
  ["arguments object", function(this: unknown) {
    return arguments
  }]
]

describe("Json", () => {
  describe("JSON-1 accepted values", () => {
    it("JSON-1: primitives are returned as they are", () => {
      for (const value of [null, true, false, 0, 1.5, -7, Number.MAX_VALUE, Number.MIN_VALUE, "", "text"]) {
        assert.deepStrictEqual(Json.snapshot(value), { _tag: "Lossless", value })
        assert.deepStrictEqual(Json.snapshotFrozen(value), { _tag: "Lossless", value })
        assert.strictEqual(Json.isLossless(value), true)
      }
    })

    it("JSON-1: strings with any content, including lone surrogates", () => {
      for (const value of ["\ud800", "a\udfffb", "\u0000", "\ud83d\ude00", "x".repeat(10_000)]) {
        assert.deepStrictEqual(Json.snapshot(value), { _tag: "Lossless", value })
        assert.deepStrictEqual(lossless({ [value]: [value] }), { [value]: [value] })
      }
    })

    it("JSON-1: nested records and arrays are copied recursively", () => {
      const input = { a: [1, "x", { b: null, c: [true, false] }], d: {}, e: [], f: 0 }
      assert.deepStrictEqual(Json.snapshot(input), {
        _tag: "Lossless",
        value: { a: [1, "x", { b: null, c: [true, false] }], d: {}, e: [], f: 0 }
      })
      assert.strictEqual(Json.isLossless(input), true)
    })

    it("JSON-1: null-prototype records are accepted", () => {
      const input = Object.assign(Object.create(null), { a: 1, b: Object.assign(Object.create(null), { c: 2 }) })
      const copy = lossless(input) as any
      assert.deepStrictEqual(copy, { a: 1, b: { c: 2 } })
      assert.strictEqual(Object.getPrototypeOf(copy), Object.prototype)
      assert.strictEqual(Object.getPrototypeOf(copy.b), Object.prototype)
    })

    it("JSON-1: plain records and arrays from another realm are accepted", () => {
      const input = vm.runInNewContext("({ a: [1, { b: 'x' }], n: null, o: Object.create(null) })")
      assert.strictEqual(Json.isLossless(input), true)
      const copy = lossless(input) as any
      assert.deepStrictEqual(copy, { a: [1, { b: "x" }], n: null, o: {} })
      assert.strictEqual(Object.getPrototypeOf(copy), Object.prototype)
      assert.strictEqual(Object.getPrototypeOf(copy.a), Array.prototype)
      assert.strictEqual(Object.getPrototypeOf(copy.a[1]), Object.prototype)
      assert.deepStrictEqual(lossless(vm.runInNewContext("[1, [2]]")), [1, [2]])
    })

    it("JSON-1: other realms' non-plain values are still rejected", () => {
      for (
        const source of [
          "new (class A {})()",
          "new Date(0)",
          "new Map()",
          "(class B extends Array {}).from([1])",
          "Object.create(Array.prototype)",
          "[1,,2]",
          "({ f() {} })",
          "-0",
          "({ a: undefined })"
        ]
      ) {
        assertRejected(vm.runInNewContext(source))
      }
    })

    it("JSON-1: forged intrinsic prototypes are rejected", () => {
      const fakeObject = Object.create(null)
      fakeObject.constructor = function Object() {}
      assertRejected(Object.create(fakeObject))
      const borrowed = Object.create(null)
      borrowed.constructor = Object
      assertRejected(Object.create(borrowed))
      assertRejected(Object.create(new Proxy(Object.prototype, {})))
      const fakeArrayProto: Array<unknown> = []
      Object.defineProperty(fakeArrayProto, "constructor", { value: Array })
      assertRejected(Object.setPrototypeOf([1], fakeArrayProto))
    })

    it("JSON-1: a proxy of a plain record or array is read through its traps", () => {
      const record = new Proxy({ a: 1, b: 2 }, { get: (target, key) => key === "a" ? 10 : Reflect.get(target, key) })
      assert.deepStrictEqual(lossless(record), { a: 10, b: 2 })
      const array = new Proxy([1, 2], {})
      const copy = lossless(array)
      assert.deepStrictEqual(copy, [1, 2])
      assert.strictEqual(Object.getPrototypeOf(copy), Array.prototype)
      assert.strictEqual(Json.isLossless(record), true)
    })

    it("JSON-1: array elements defined as accessors are accepted", () => {
      const array = Object.defineProperty([0, 0], 1, { get: () => 5, enumerable: true })
      assert.deepStrictEqual(lossless(array), [0, 5])
    })

    it("JSON-1: integer-like and unusual keys are plain keys", () => {
      const input = { "": 1, "0": 2, "-0": 3, "constructor": 4, "hasOwnProperty": 5, "length": 6 }
      assert.deepStrictEqual(lossless(input), {
        "": 1,
        "0": 2,
        "-0": 3,
        "constructor": 4,
        "hasOwnProperty": 5,
        "length": 6
      })
    })
  })

  describe("JSON-2 rejected values", () => {
    for (const [name, make] of rejectedKinds) {
      it(`JSON-2: ${name} is rejected at the top level, as a property and as an element`, () => {
        const value = make()
        if (typeof value === "object" && value !== null || typeof value === "function") {
          assertRejected(value)
        } else {
          assert.deepStrictEqual(Json.snapshot(value), NOT_LOSSLESS)
          assert.strictEqual(Json.isLossless(value), false)
        }
        assertRejected({ ok: 1, bad: value })
        assertRejected([1, value])
        assertRejected({ deep: [{ deeper: [value] }] })
      })
    }

    it("JSON-2: a class instance is rejected without running class code", () => {
      class Hostile {
        static get name(): string {
          throw new Error("must not run")
        }
      }
      assertRejected(new Hostile())
      assertRejected({ nested: [new Hostile()] })
    })

    it("JSON-2: an undefined property or element is rejected", () => {
      assertRejected({ a: undefined })
      assertRejected([undefined])
      assertRejected([1, undefined, 2])
    })

    it("JSON-2: a direct cycle is rejected", () => {
      const self: Record<string, unknown> = { a: 1 }
      self.self = self
      assertRejected(self)
      const array: Array<unknown> = [1]
      array.push(array)
      assertRejected(array)
    })

    it("JSON-2: an indirect cycle is rejected", () => {
      const a: Record<string, unknown> = {}
      const b = { list: [{ back: a }] }
      a.b = b
      assertRejected(a)
      assertRejected({ wrapper: [a] })
    })

    it("JSON-2: cycles are found both near the root and below 32 levels", () => {
      for (const [depth, target] of [[80, 5], [80, 40], [200, 199], [200, 0]]) {
        const nodes: Array<Record<string, unknown>> = []
        for (let i = 0; i < depth; i++) nodes.push({})
        for (let i = 0; i < depth - 1; i++) nodes[i].next = nodes[i + 1]
        nodes[depth - 1].next = [1, nodes[target]]
        assertRejected(nodes[0])
      }
    })

    it("JSON-2: getters of a rejected value are read at most once", () => {
      for (const run of [Json.snapshot, Json.snapshotFrozen, Json.isLossless]) {
        let reads = 0
        const input = {
          bad: NaN,
          get later() {
            reads++
            return 1
          }
        }
        run(input)
        assert.isAtMost(reads, 1)
      }
    })
  })

  describe("JSON-3 getters", () => {
    it("JSON-3: each getter is read exactly once by snapshot, snapshotFrozen and isLossless", () => {
      for (const run of [Json.snapshot, Json.snapshotFrozen, Json.isLossless]) {
        const counts = { a: 0, b: 0, nested: 0, element: 0 }
        const element = Object.defineProperty([1, 2], 0, {
          get: () => {
            counts.element++
            return "e"
          },
          enumerable: true
        })
        const input = {
          get a() {
            counts.a++
            return 1
          },
          get b() {
            counts.b++
            return {
              get nested() {
                counts.nested++
                return element
              }
            }
          }
        }
        run(input)
        assert.deepStrictEqual(counts, { a: 1, b: 1, nested: 1, element: 1 })
      }
    })

    it("JSON-3: the copy holds the value read, even if a later read would differ", () => {
      let reads = 0
      const input = {
        get drifting() {
          reads++
          return reads === 1 ? ["safe"] : new Map()
        }
      }
      const copy = lossless(input) as any
      assert.deepStrictEqual(copy, { drifting: ["safe"] })
      assert.strictEqual(reads, 1)
      assert.strictEqual(Object.getOwnPropertyDescriptor(copy, "drifting")?.writable, true)
    })

    it("JSON-3: a throwing getter yields Threw with the thrown value", () => {
      const error = new Error("getter exploded")
      const input = {
        get bad() {
          throw error
        }
      }
      assertThrew(input, error)
      assertThrew({ nested: [input] }, error)
      const element = Object.defineProperty([1, 2], 1, { get: () => { throw error }, enumerable: true })
      assertThrew(element, error)
      assert.deepStrictEqual(Json.snapshotFrozen([element]), { _tag: "Threw", error })
      assert.strictEqual(Json.isLossless(element), false)
      assert.deepStrictEqual(Json.snapshotFrozen(input), { _tag: "Threw", error })
      assert.strictEqual(Json.isLossless(input), false)
    })

    it("JSON-3: a thrown non-Error value is passed through", () => {
      const input = {
        get bad(): unknown {
          throw "raw"
        }
      }
      assert.deepStrictEqual(Json.snapshot(input), { _tag: "Threw", error: "raw" })
      const undefinedThrow = {
        get bad(): unknown {
          throw undefined
        }
      }
      assert.deepStrictEqual(Json.snapshot(undefinedThrow), { _tag: "Threw", error: undefined })
    })

    it("JSON-3: a throwing proxy trap yields Threw", () => {
      const error = new Error("trap")
      const traps: ReadonlyArray<ProxyHandler<object>> = [
        { get: () => { throw error } },
        { ownKeys: () => { throw error } },
        { getPrototypeOf: () => { throw error } },
        { getOwnPropertyDescriptor: () => { throw error } }
      ]
      for (const handler of traps) {
        const proxy = new Proxy({ a: 1 }, handler)
        assertThrew(proxy, error)
        assertThrew([proxy], error)
        assert.strictEqual(Json.isLossless(proxy), false)
      }
      assertThrew(new Proxy([1], { get: () => { throw error } }), error)
    })

    it("JSON-3: a revoked proxy yields Threw with a TypeError", () => {
      const { proxy, revoke } = Proxy.revocable({}, {})
      revoke()
      assert.instanceOf(assertThrew({ a: proxy }), TypeError)
      assert.strictEqual(Json.isLossless(proxy), false)
    })

    it("JSON-3: snapshots may be taken from inside a getter", () => {
      const inner = { x: [1] }
      const input = {
        get a() {
          return Json.snapshot(inner)._tag
        },
        b: [2]
      }
      assert.deepStrictEqual(lossless(input), { a: "Lossless", b: [2] })
    })
  })

  describe("JSON-4 sharing", () => {
    it("JSON-4: the same object on two non-cyclic paths is accepted and copied twice", () => {
      const shared = { z: [1] }
      const copy = lossless({ p: shared, q: [shared, shared] }) as any
      assert.deepStrictEqual(copy, { p: { z: [1] }, q: [{ z: [1] }, { z: [1] }] })
      assert.notStrictEqual(copy.p, copy.q[0])
      assert.notStrictEqual(copy.q[0], copy.q[1])
      assert.notStrictEqual(copy.p.z, copy.q[0].z)
    })

    it("JSON-4: sharing below 32 levels is not mistaken for a cycle", () => {
      const shared = nestObjects(50, "leaf")
      const input = nestObjects(60, { x: shared, y: [shared, shared] })
      assert.strictEqual(Json.isLossless(input), true)
      const bottom = descend(lossless(input), 60, (node) => node.a) as any
      assert.strictEqual(descend(bottom.y[1], 50, (node) => node.a), "leaf")
    })
  })

  describe("JSON-5 copy shape", () => {
    it("JSON-5: the copy is made of fresh ordinary objects and arrays", () => {
      const inner = [1]
      const input = { a: inner, b: { c: 2 } }
      const copy = lossless(input) as any
      assert.notStrictEqual(copy, input)
      assert.notStrictEqual(copy.a, inner)
      assert.notStrictEqual(copy.b, input.b)
      assert.strictEqual(Object.getPrototypeOf(copy), Object.prototype)
      assert.strictEqual(Object.getPrototypeOf(copy.a), Array.prototype)
      assert.isFalse(Object.isFrozen(copy))
      copy.b.c = 3
      assert.strictEqual(input.b.c, 2)
    })

    it("JSON-5: keys keep source order", () => {
      const input = { b: 1, a: 2, 2: "two", 1: "one", z: 3 }
      assert.deepStrictEqual(Object.keys(lossless(input) as object), ["1", "2", "b", "a", "z"])
    })

    it("JSON-5: __proto__ stays an ordinary own key", () => {
      const input = JSON.parse("{\"__proto__\": {\"polluted\": true}, \"y\": 2}")
      const copy = lossless(input) as any
      assert.strictEqual(Object.getPrototypeOf(copy), Object.prototype)
      assert.deepStrictEqual(Object.keys(copy), ["__proto__", "y"])
      assert.deepStrictEqual(Object.getOwnPropertyDescriptor(copy, "__proto__"), {
        value: { polluted: true },
        writable: true,
        enumerable: true,
        configurable: true
      })
      assert.strictEqual(({} as any).polluted, undefined)
      assert.strictEqual(copy.polluted, undefined)
      const primitive = lossless(JSON.parse("{\"__proto__\": 1}")) as any
      assert.strictEqual(Object.getOwnPropertyDescriptor(primitive, "__proto__")?.value, 1)
      assert.strictEqual(Object.getPrototypeOf(primitive), Object.prototype)
      const frozen = Json.snapshotFrozen(input)
      assert.strictEqual(frozen._tag, "Lossless")
      assert.isTrue(Object.hasOwn((frozen as any).value, "__proto__"))
    })

    it("JSON-5: snapshotFrozen freezes every container of the copy, not the input", () => {
      const input = { a: [{ b: 1 }], c: {} }
      const result = Json.snapshotFrozen(input)
      assert.deepStrictEqual(result, { _tag: "Lossless", value: { a: [{ b: 1 }], c: {} } })
      const copy = (result as any).value
      for (const node of [copy, copy.a, copy.a[0], copy.c]) assert.isTrue(Object.isFrozen(node))
      for (const node of [input, input.a, input.a[0], input.c]) assert.isFalse(Object.isFrozen(node))
    })

    it("JSON-5: frozen inputs are copied into fresh, unfrozen containers by snapshot", () => {
      const input = Object.freeze({ a: Object.freeze([1]) })
      const copy = lossless(input) as any
      assert.isFalse(Object.isFrozen(copy))
      assert.isFalse(Object.isFrozen(copy.a))
    })
  })

  describe("JSON-6 stack safety", () => {
    it("JSON-6: 100,000-deep nested arrays", () => {
      const input = nestArrays(DEEP, 7)
      assert.strictEqual(Json.isLossless(input), true)
      const copy = lossless(input)
      assert.strictEqual(descend(copy, DEEP, (node) => node[0]), 7)
      const frozen = Json.snapshotFrozen(input)
      assert.strictEqual(frozen._tag, "Lossless")
      assert.isTrue(Object.isFrozen(descend((frozen as any).value, DEEP - 1, (node) => node[0])))
    })

    it("JSON-6: 100,000-deep nested objects", () => {
      const input = nestObjects(DEEP, "leaf")
      assert.strictEqual(Json.isLossless(input), true)
      assert.strictEqual(descend(lossless(input), DEEP, (node) => node.a), "leaf")
      const frozen = Json.snapshotFrozen(input)
      assert.isTrue(Object.isFrozen(descend((frozen as any).value, DEEP - 1, (node) => node.a)))
    })

    it("JSON-6: problems at the bottom of a 100,000-deep value are found", () => {
      assert.deepStrictEqual(Json.snapshot(nestArrays(DEEP, -0)), NOT_LOSSLESS)
      assert.strictEqual(Json.isLossless(nestObjects(DEEP, new Date(0))), false)
      const root: Record<string, unknown> = {}
      let node = root
      for (let i = 0; i < DEEP; i++) {
        const child: Record<string, unknown> = {}
        node.a = child
        node = child
      }
      node.a = [root]
      assert.deepStrictEqual(Json.snapshot(root), NOT_LOSSLESS)
      assert.strictEqual(Json.isLossless(root), false)
      const error = new Error("deep")
      assertThrew(nestObjects(DEEP, { get x() { throw error } }), error)
    })

    it("JSON-6: deepFreeze handles 100,000-deep arrays and objects", () => {
      const cases = [[nestArrays(DEEP, 1), (n: any) => n[0]], [nestObjects(DEEP, 1), (n: any) => n.a]] as const
      for (const [input, step] of cases) {
        assert.strictEqual(Json.deepFreeze(input), input)
        assert.isTrue(Object.isFrozen(descend(input, DEEP - 1, step)))
      }
    })
  })

  describe("JSON-7 deep freeze", () => {
    it("JSON-7: freezes every reachable object in place and returns its argument", () => {
      const input = { a: [{ b: 1 }, [2]], c: { d: { e: null } }, f: "x" }
      assert.strictEqual(Json.deepFreeze(input), input)
      for (const node of [input, input.a, input.a[0], input.a[1], input.c, input.c.d]) {
        assert.isTrue(Object.isFrozen(node))
      }
    })

    it("JSON-7: primitives are returned unchanged", () => {
      for (const value of [null, undefined, 1, "s", true, 1n]) assert.strictEqual(Json.deepFreeze(value), value)
    })

    it("JSON-7: cycles and shared objects are handled", () => {
      const list: Array<unknown> = []
      const a: Record<string, unknown> = { list }
      const b = { a, again: a }
      a.b = b
      list.push(a, b)
      Json.deepFreeze(a)
      for (const node of [a, b, a.list]) assert.isTrue(Object.isFrozen(node))
    })

    it("JSON-7: AbortSignal instances are skipped", () => {
      const controller = new AbortController()
      const extra = { reachableOnlyThroughSignal: true }
      Object.assign(controller.signal, { extra })
      const input = { signal: controller.signal, data: { x: 1 } }
      Json.deepFreeze(input)
      assert.isTrue(Object.isFrozen(input))
      assert.isTrue(Object.isFrozen(input.data))
      assert.isFalse(Object.isFrozen(controller.signal))
      assert.isFalse(Object.isFrozen(extra))
      controller.abort()
      assert.isTrue(input.signal.aborted)
      assert.strictEqual(Json.deepFreeze(controller.signal), controller.signal)
      assert.isFalse(Object.isFrozen(controller.signal))
    })

    it("JSON-7: only own enumerable string-keyed data properties are followed", () => {
      let reads = 0
      const hidden = { h: 1 }
      const bySymbol = { s: 1 }
      const byGetter = { g: 1 }
      const inherited = { i: 1 }
      const input = Object.create({ inherited })
      Object.defineProperty(input, "hidden", { value: hidden, enumerable: false })
      input[Symbol("k")] = bySymbol
      Object.defineProperty(input, "viaGetter", {
        get: () => {
          reads++
          return byGetter
        },
        enumerable: true
      })
      input.visible = { v: 1 }
      Json.deepFreeze(input)
      assert.isTrue(Object.isFrozen(input))
      assert.isTrue(Object.isFrozen(input.visible))
      for (const node of [hidden, bySymbol, byGetter, inherited]) assert.isFalse(Object.isFrozen(node))
      assert.strictEqual(reads, 0)
    })

    it("JSON-7: non-JSON objects are frozen too, and hostile values never make it throw", () => {
      const map = new Map()
      const point = new Point(1)
      const bytes = new Uint8Array([1, 2])
      const { proxy, revoke } = Proxy.revocable({}, {})
      revoke()
      const hostile = new Proxy({}, { preventExtensions: () => { throw new Error("no") } })
      const after = { z: 1 }
      const input = { map, point, bytes, proxy, hostile, after }
      assert.strictEqual(Json.deepFreeze(input), input)
      assert.isTrue(Object.isFrozen(map))
      assert.isTrue(Object.isFrozen(point))
      assert.isFalse(Object.isFrozen(bytes))
      assert.isTrue(Object.isFrozen(after))
    })
  })

  describe("isPlainRecord", () => {
    it("JSON-1: accepts records with a null or intrinsic Object.prototype of any realm", () => {
      assert.isTrue(Json.isPlainRecord({}))
      assert.isTrue(Json.isPlainRecord({ f: () => 1, d: new Date() }))
      assert.isTrue(Json.isPlainRecord(Object.create(null)))
      assert.isTrue(Json.isPlainRecord(JSON.parse("{\"a\":1}")))
      assert.isTrue(Json.isPlainRecord(vm.runInNewContext("({})")))
      assert.isTrue(Json.isPlainRecord(vm.runInNewContext("Object.create(null)")))
      assert.isTrue(Json.isPlainRecord(new Proxy({}, {})))
    })

    it("JSON-1: rejects everything else without throwing", () => {
      const { proxy, revoke } = Proxy.revocable({}, {})
      revoke()
      const hostile = new Proxy({}, { getPrototypeOf: () => { throw new Error("no") } })
      for (
        const value of [
          null,
          undefined,
          1,
          "s",
          [],
          vm.runInNewContext("[]"),
          new Date(),
          new Map(),
          new Point(1),
          Object.create({}),
          Object.create(Array.prototype),
          vm.runInNewContext("new (class A {})()"),
          () => 1,
          proxy,
          hostile
        ]
      ) {
        assert.isFalse(Json.isPlainRecord(value))
      }
    })
  })
})
