/**
 * Text rules shared by the SDK renderers: description cleaning for JSDoc, Python comments and
 * docstrings, identifier tests, Python class-name parts and literal formatting.
 *
 * @internal
 */
import type { JsonValue } from "../../Json.js"

const WHITESPACE = /\s+/g

/**
 * A TypeScript JSDoc text: whitespace runs collapsed, trimmed, every `*\/` written `*\\/`;
 * `undefined` when nothing is left.
 *
 * @internal
 */
export const jsDoc = (description: string | undefined): string | undefined => {
  if (description === undefined) return undefined
  const text = description.replace(WHITESPACE, " ").trim()
  return text === "" ? undefined : text.replaceAll("*/", "*\\/")
}

const UNPRINTABLE = /[\x00-\x1f\x7f-\x9f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

const escapeUnit = (unit: string): string => {
  const code = unit.charCodeAt(0)
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`
}

/**
 * A Python comment text: whitespace runs collapsed, C0 / DEL / C1 controls as `\xNN`, lone
 * surrogates as `\uNNNN`, trimmed; `undefined` when nothing is left.
 *
 * @internal
 */
export const pythonComment = (description: string | undefined): string | undefined => {
  if (description === undefined) return undefined
  const text = description.replace(WHITESPACE, " ").replace(UNPRINTABLE, escapeUnit).trim()
  return text === "" ? undefined : text
}

/**
 * A Python docstring body: the comment text with backslashes doubled and `"` escaped.
 *
 * @internal
 */
export const pythonDocstring = (description: string | undefined): string | undefined => {
  const text = pythonComment(description)
  return text === undefined ? undefined : text.replaceAll("\\", "\\\\").replaceAll("\"", "\\\"")
}

const TS_IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/**
 * A TypeScript member key: bare when it is an ASCII identifier (reserved words included),
 * otherwise JSON-quoted.
 *
 * @internal
 */
export const tsKey = (name: string): string => (TS_IDENTIFIER.test(name) ? name : JSON.stringify(name))

const PY_IDENTIFIER = /^[\p{XID_Start}_]\p{XID_Continue}*$/u

/**
 * A bare Python identifier: Unicode XID syntax and unchanged by NFKC.
 *
 * @internal
 */
export const isPythonIdentifier = (name: string): boolean =>
  PY_IDENTIFIER.test(name) && name.normalize("NFKC") === name

/**
 * Python's hard keywords, plus `__debug__` (soft keywords such as `match`, `type` and `_` are
 * usable names).
 *
 * @internal
 */
export const PYTHON_HARD_KEYWORDS: ReadonlySet<string> = new Set([
  "False",
  "None",
  "True",
  "and",
  "as",
  "assert",
  "async",
  "await",
  "break",
  "class",
  "continue",
  "def",
  "del",
  "elif",
  "else",
  "except",
  "finally",
  "for",
  "from",
  "global",
  "if",
  "import",
  "in",
  "is",
  "lambda",
  "nonlocal",
  "not",
  "or",
  "pass",
  "raise",
  "return",
  "try",
  "while",
  "with",
  "yield",
  "__debug__"
])

/**
 * Whether a tool is a `Tools` method (otherwise it is listed as a subscript comment).
 *
 * @internal
 */
export const isPythonMethodName = (name: string): boolean =>
  isPythonIdentifier(name) && !PYTHON_HARD_KEYWORDS.has(name) && !name.startsWith("_")

/**
 * Whether a property can be a `TypedDict` field: a bare identifier, not a hard keyword, and not
 * subject to name mangling (`__x` without a trailing `__`).
 *
 * @internal
 */
export const isPythonFieldName = (name: string): boolean =>
  isPythonIdentifier(name) && !PYTHON_HARD_KEYWORDS.has(name) &&
  !(name.startsWith("__") && !name.endsWith("__"))

const CAMEL_SEPARATORS = /(?:[^\p{XID_Continue}]|_)+/u
const XID_START = /^\p{XID_Start}/u

const upperFirst = (part: string): string => {
  const first = String.fromCodePoint(part.codePointAt(0)!)
  return first.toUpperCase() + part.slice(first.length)
}

/**
 * Camel(x): split on runs of non-XID_Continue characters and of `_`, upper-case each part's
 * first character, join, NFKC; prefix `Tool` unless it starts with an XID_Start character; NFKC.
 *
 * @internal
 */
export const camel = (name: string): string => {
  const parts = name.split(CAMEL_SEPARATORS)
  let joined = ""
  for (const part of parts) if (part !== "") joined += upperFirst(part)
  const normalized = joined.normalize("NFKC")
  return (XID_START.test(normalized) ? normalized : `Tool${normalized}`).normalize("NFKC")
}

const MAX_BASE = 120

/**
 * A class-name base: NFKC-normalized and capped at 120 UTF-16 units, dropping a high surrogate
 * left dangling by the cut.
 *
 * @internal
 */
export const classBase = (base: string): string => {
  const normalized = base.normalize("NFKC")
  if (normalized.length <= MAX_BASE) return normalized
  const cut = normalized.slice(0, MAX_BASE)
  const last = cut.charCodeAt(MAX_BASE - 1)
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, MAX_BASE - 1) : cut
}

/**
 * Allocates unique class names: a free base is used as is, a taken one gets the smallest unused
 * numeric suffix from `2` (counted per base).
 *
 * @internal
 */
export class ClassNames {
  private readonly used = new Set<string>()
  private readonly next = new Map<string, number>()

  constructor(reserved: ReadonlyArray<string>) {
    for (const name of reserved) this.used.add(name)
  }

  allocate(rawBase: string): string {
    const base = classBase(rawBase)
    if (!this.used.has(base)) {
      this.used.add(base)
      return base
    }
    let n = this.next.get(base) ?? 2
    while (this.used.has(`${base}${n}`)) n++
    const name = `${base}${n}`
    this.next.set(base, n + 1)
    this.used.add(name)
    return name
  }
}

/**
 * A Python literal: JSON-quoted strings, `True`/`False`, `None`, integral numbers outside the
 * safe range as exact digits, other numbers in JavaScript's default formatting.
 *
 * @internal
 */
export const pythonLiteral = (value: JsonValue): string => {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value)
    case "boolean":
      return value ? "True" : "False"
    case "number":
      return Number.isInteger(value) && !Number.isSafeInteger(value) ? BigInt(value).toString() : String(value)
    default:
      return "None"
  }
}

/**
 * A TypeScript literal type: the value's JSON text.
 *
 * @internal
 */
export const tsLiteral = (value: JsonValue): string => JSON.stringify(value) ?? "null"
