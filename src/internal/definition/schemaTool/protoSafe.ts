/**
 * JSON-4 / JSON-5: an own `"__proto__"` key stays an own data key through decoding and encoding.
 * The AST a tool decodes and encodes with is the schema's, with every TypeLiteral that could meet
 * such a key replaced by a declaration running a parser that keeps it.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import { hasOwn } from "./objects.js"

const PROTO = "__proto__"

type Parse = (input: unknown, options?: AST.ParseOptions) => Either.Either<unknown, ParseResult.ParseIssue>
type Parsed = Either.Either<unknown, ParseResult.ParseIssue> | Effect.Effect<unknown, ParseResult.ParseIssue>

const parserOf = (ast: AST.AST, isDecoding: boolean): Parse => {
  const schema = Schema.make(ast)
  return isDecoding ? ParseResult.decodeUnknownEither(schema) : ParseResult.encodeUnknownEither(schema)
}

const isStringParameter = (parameter: AST.AST): boolean => {
  let current = parameter
  while (AST.isRefinement(current)) current = current.from
  return AST.isStringKeyword(current) || AST.isTemplateLiteral(current)
}

const isRecordInput = (u: unknown): u is Record<PropertyKey, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const defineData = (target: object, key: PropertyKey, value: unknown): void => {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true })
}

type Order = readonly [number, number]

const byOrder = <T extends { readonly order: Order }>(a: T, b: T): number =>
  a.order[0] - b.order[0] || a.order[1] - b.order[1]

const issuesOf = (issue: ParseResult.ParseIssue): ReadonlyArray<ParseResult.ParseIssue> => {
  if (issue._tag !== "Composite") return [issue]
  return Array.isArray(issue.issues) ? issue.issues : [issue.issues as ParseResult.ParseIssue]
}

/**
 * The parser of one TypeLiteral that keeps an own `__proto__` key of the input as an own data
 * key of the output. Effect's TypeLiteral parser assembles its output with assignments, so
 * `output["__proto__"] = v` would set the prototype of the output to `v` (or drop a primitive
 * `v`). Keys of a TypeLiteral are checked independently, so the input is split: every other key
 * goes through Effect's own parser; the `__proto__` key goes through exactly the checks Effect
 * applies to it (excess check, a property signature of that name, the index signatures whose
 * key schema accepts it), and the output is assembled with `defineProperty` in Effect's order.
 */
const protoSafeParser = (literal: AST.AST, isDecoding: boolean) => {
  const whole = parserOf(literal, isDecoding)
  if (!AST.isTypeLiteral(literal)) return (input: unknown, options: AST.ParseOptions): Parsed => whole(input, options)
  const signatures = literal.propertySignatures
  const psIndex = new Map<PropertyKey, number>()
  for (let i = 0; i < signatures.length; i++) psIndex.set(signatures[i]!.name, i)
  const protoIndex = psIndex.get(PROTO)
  const protoSignature = protoIndex === undefined ? undefined : parserOf(signatures[protoIndex]!.type, isDecoding)
  const indexParsers: Array<Parse> = []
  let expected = protoSignature !== undefined
  for (const index of literal.indexSignatures) {
    if (!Either.isRight(parserOf(index.parameter, isDecoding)(PROTO))) continue
    expected = true
    if (isStringParameter(index.parameter)) indexParsers.push(parserOf(index.type, isDecoding))
  }
  let expectedText: string | undefined
  const unexpected = (): string => {
    if (expectedText === undefined) {
      const keys = literal.indexSignatures.map((index): AST.AST => index.parameter).concat(
        signatures.map((ps) =>
          typeof ps.name === "symbol" ? new AST.UniqueSymbol(ps.name) : new AST.Literal(ps.name as string | number)
        )
      )
      expectedText = `is unexpected, expected: ${String(AST.Union.make(keys))}`
    }
    return expectedText
  }

  return (input: unknown, options: AST.ParseOptions): Parsed => {
    if (!isRecordInput(input) || !hasOwn(input, PROTO)) return whole(input, options)
    const keys = Reflect.ownKeys(input)
    const position = new Map<PropertyKey, number>()
    for (let i = 0; i < keys.length; i++) position.set(keys[i]!, i)
    const rest: object = Object.create(Object.getPrototypeOf(input))
    for (const key of keys) {
      if (key !== PROTO) Object.defineProperty(rest, key, Object.getOwnPropertyDescriptor(input, key)!)
    }
    const value = input[PROTO]
    const protoPosition = position.get(PROTO)!
    const enumerable = Object.prototype.propertyIsEnumerable.call(input, PROTO)
    const orderOf = (key: PropertyKey, unexpectedKey: boolean): Order => {
      if (unexpectedKey) return [0, position.get(key) ?? keys.length]
      const ps = psIndex.get(key)
      return ps !== undefined ? [1, ps] : [2, position.get(key) ?? keys.length]
    }
    const own: Array<{ readonly order: Order; readonly result: Parsed }> = []
    let preserved = false
    if (!expected) {
      if (options?.onExcessProperty === "error") {
        own.push({
          order: [0, protoPosition],
          result: Either.left(new ParseResult.Pointer(PROTO, input, new ParseResult.Unexpected(value, unexpected())))
        })
      } else if (options?.onExcessProperty === "preserve") {
        preserved = true
      }
    }
    if (protoSignature !== undefined) own.push({ order: [1, protoIndex!], result: protoSignature(value, options) })
    if (enumerable) {
      for (const parse of indexParsers) own.push({ order: [2, protoPosition], result: parse(value, options) })
    }
    const assemble = (
      restResult: Either.Either<unknown, ParseResult.ParseIssue>,
      ownResults: ReadonlyArray<Either.Either<unknown, ParseResult.ParseIssue>>
    ): Either.Either<unknown, ParseResult.ParseIssue> => {
      const failures: Array<{ readonly order: Order; readonly issue: ParseResult.ParseIssue }> = []
      if (Either.isLeft(restResult)) {
        for (const issue of issuesOf(restResult.left)) {
          failures.push({
            order: issue._tag === "Pointer" && !Array.isArray(issue.path)
              ? orderOf(issue.path as PropertyKey, issue.issue._tag === "Unexpected")
              : [3, 0],
            issue
          })
        }
      }
      let protoValue: { readonly value: unknown } | undefined = preserved ? { value } : undefined
      for (let i = 0; i < own.length; i++) {
        const result = ownResults[i]!
        if (Either.isLeft(result)) {
          const issue = result.left
          failures.push({
            order: own[i]!.order,
            issue: issue._tag === "Pointer" ? issue : new ParseResult.Pointer(PROTO, input, issue)
          })
        } else if (own[i]!.order[0] === 1 || protoSignature === undefined) {
          protoValue = { value: result.right }
        }
      }
      if (failures.length > 0) {
        failures.sort(byOrder)
        const issues = failures.map((failure) => failure.issue) as [
          ParseResult.ParseIssue,
          ...Array<ParseResult.ParseIssue>
        ]
        return Either.left(new ParseResult.Composite(literal, input, options?.errors === "all" ? issues : issues[0]))
      }
      const output = (restResult as Either.Right<unknown, ParseResult.ParseIssue>).right as object
      const entries: Array<{ readonly order: Order; readonly key: PropertyKey; readonly value: unknown }> = []
      for (const key of Reflect.ownKeys(output)) {
        entries.push({ order: orderOf(key, false), key, value: (output as Record<PropertyKey, unknown>)[key] })
      }
      if (protoValue !== undefined) {
        entries.push({ order: orderOf(PROTO, preserved), key: PROTO, value: protoValue.value })
      }
      entries.sort(byOrder)
      const out: object = {}
      for (const entry of entries) defineData(out, entry.key, entry.value)
      return Either.right(out)
    }
    const restResult = whole(rest, options) as Parsed
    if (Either.isEither(restResult) && own.every((entry) => Either.isEither(entry.result))) {
      return assemble(restResult, own.map((entry) => entry.result as Either.Either<unknown, ParseResult.ParseIssue>))
    }
    return Effect.flatMap(
      Effect.all([Effect.either(restResult), Effect.all(own.map((entry) => Effect.either(entry.result)))]),
      ([restEither, ownEithers]) => assemble(restEither, ownEithers)
    )
  }
}

const needsProtoGuard = (literal: AST.TypeLiteral): boolean =>
  literal.indexSignatures.length > 0 || literal.propertySignatures.some((ps) => ps.name === PROTO)

const protoSafeNode = (literal: AST.TypeLiteral, expected: string): AST.AST =>
  new AST.Declaration(
    [literal],
    (inner) => protoSafeParser(inner, true),
    (inner) => protoSafeParser(inner, false),
    { [AST.IdentifierAnnotationId]: expected, [AST.SurrogateAnnotationId]: literal }
  )

const sameNodes = (a: ReadonlyArray<unknown>, b: ReadonlyArray<unknown>): boolean => a.every((x, i) => x === b[i])

/**
 * The AST used for decoding and encoding: `ast` with every TypeLiteral that could meet an own
 * `__proto__` key (index signatures, or a property of that name) replaced by a declaration
 * running {@link protoSafeParser}. Messages, paths and union candidates are unchanged. The JSON
 * Schema projection still uses the original AST.
 *
 * @internal
 */
export const protoSafe = (root: AST.AST): AST.AST => {
  const memo = new Map<AST.AST, AST.AST>()
  const go = (ast: AST.AST): AST.AST => {
    const hit = memo.get(ast)
    if (hit !== undefined) return hit
    let out: AST.AST
    switch (ast._tag) {
      case "Declaration": {
        const parameters = ast.typeParameters.map(go)
        out = sameNodes(parameters, ast.typeParameters)
          ? ast
          : new AST.Declaration(parameters, ast.decodeUnknown, ast.encodeUnknown, ast.annotations)
        break
      }
      case "Refinement": {
        const from = go(ast.from)
        out = from === ast.from ? ast : new AST.Refinement(from, ast.filter, ast.annotations)
        break
      }
      case "TupleType": {
        const elements = ast.elements.map((e) => {
          const type = go(e.type)
          return type === e.type ? e : new AST.OptionalType(type, e.isOptional, e.annotations)
        })
        const rest = ast.rest.map((r) => {
          const type = go(r.type)
          return type === r.type ? r : new AST.Type(type, r.annotations)
        })
        out = sameNodes(elements, ast.elements) && sameNodes(rest, ast.rest)
          ? ast
          : new AST.TupleType(elements, rest, ast.isReadonly, ast.annotations)
        break
      }
      case "TypeLiteral": {
        const signatures = ast.propertySignatures.map((ps) => {
          const type = go(ps.type)
          return type === ps.type
            ? ps
            : new AST.PropertySignature(ps.name, type, ps.isOptional, ps.isReadonly, ps.annotations)
        })
        const indexes = ast.indexSignatures.map((index) => {
          const type = go(index.type)
          return type === index.type ? index : new AST.IndexSignature(index.parameter, type, index.isReadonly)
        })
        const inner = sameNodes(signatures, ast.propertySignatures) && sameNodes(indexes, ast.indexSignatures)
          ? ast
          : new AST.TypeLiteral(signatures, indexes, ast.annotations)
        out = needsProtoGuard(ast) ? protoSafeNode(inner, String(ast)) : inner
        break
      }
      case "Union": {
        const types = ast.types.map(go)
        out = sameNodes(types, ast.types) ? ast : AST.Union.make(types, ast.annotations)
        break
      }
      case "Suspend": {
        const original = ast
        const suspended = new AST.Suspend(() => go(original.f()), ast.annotations)
        memo.set(ast, suspended)
        return suspended
      }
      case "Transformation": {
        const from = go(ast.from)
        const to = go(ast.to)
        out = from === ast.from && to === ast.to
          ? ast
          : new AST.Transformation(from, to, ast.transformation, ast.annotations)
        break
      }
      default:
        out = ast
    }
    memo.set(ast, out)
    return out
  }
  return go(root)
}
