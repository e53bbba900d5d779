/**
 * PTC-3: the `run_code` result as one text block — the printed lines, then the returned value
 * (a string raw, anything else pretty JSON with 2-space indentation, compact from depth 5).
 * Iterative: nesting depth is bounded only by memory.
 *
 * @internal
 */
import type { JsonValue } from "../../Json.js"

/** @internal */
export const NO_OUTPUT = "(run_code completed with no output)"

/** Containers nested at this depth (root = 0) and everything inside them render compactly. */
const COMPACT_DEPTH = 5

type Frame =
  | { readonly kind: "array"; readonly items: ReadonlyArray<JsonValue>; index: number; readonly depth: number }
  | {
    readonly kind: "object"
    readonly record: { readonly [key: string]: JsonValue }
    readonly keys: ReadonlyArray<string>
    index: number
    readonly depth: number
  }

const scalar = (value: JsonValue): string | undefined => {
  if (value === null) return "null"
  switch (typeof value) {
    case "string":
      return JSON.stringify(value)
    case "number":
      return String(value)
    case "boolean":
      return value ? "true" : "false"
    default:
      return undefined
  }
}

/** `[1,{"k":2}]`: JSON without any whitespace, iteratively. */
const compact = (root: JsonValue, out: Array<string>): void => {
  const stack: Array<Frame> = []
  const open = (value: JsonValue): void => {
    const text = scalar(value)
    if (text !== undefined) {
      out.push(text)
      return
    }
    if (Array.isArray(value)) {
      out.push("[")
      stack.push({ kind: "array", items: value, index: 0, depth: 0 })
      return
    }
    const record = value as { readonly [key: string]: JsonValue }
    out.push("{")
    stack.push({ kind: "object", record, keys: Object.keys(record), index: 0, depth: 0 })
  }
  open(root)
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]
    if (frame.kind === "array") {
      if (frame.index >= frame.items.length) {
        stack.pop()
        out.push("]")
        continue
      }
      if (frame.index > 0) out.push(",")
      open(frame.items[frame.index++])
    } else {
      if (frame.index >= frame.keys.length) {
        stack.pop()
        out.push("}")
        continue
      }
      if (frame.index > 0) out.push(",")
      const key = frame.keys[frame.index++]
      out.push(JSON.stringify(key), ":")
      open(frame.record[key])
    }
  }
}

const indent = (depth: number): string => "  ".repeat(depth)

/**
 * Pretty JSON: one member per line, `"key": value`, `[]` / `{}` for empty containers; a
 * container at depth ≥ 5 renders compactly, so indentation never exceeds 10 spaces.
 *
 * @internal
 */
export const pretty = (root: JsonValue): string => {
  const out: Array<string> = []
  const stack: Array<Frame> = []
  const open = (value: JsonValue, depth: number): void => {
    const text = scalar(value)
    if (text !== undefined) {
      out.push(text)
      return
    }
    if (depth >= COMPACT_DEPTH) {
      compact(value, out)
      return
    }
    if (Array.isArray(value)) {
      if (value.length === 0) {
        out.push("[]")
        return
      }
      out.push("[")
      stack.push({ kind: "array", items: value, index: 0, depth })
      return
    }
    const record = value as { readonly [key: string]: JsonValue }
    const keys = Object.keys(record)
    if (keys.length === 0) {
      out.push("{}")
      return
    }
    out.push("{")
    stack.push({ kind: "object", record, keys, index: 0, depth })
  }
  open(root, 0)
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]
    const length = frame.kind === "array" ? frame.items.length : frame.keys.length
    if (frame.index >= length) {
      stack.pop()
      out.push("\n", indent(frame.depth), frame.kind === "array" ? "]" : "}")
      continue
    }
    out.push(frame.index > 0 ? ",\n" : "\n", indent(frame.depth + 1))
    if (frame.kind === "array") {
      open(frame.items[frame.index++], frame.depth + 1)
    } else {
      const key = frame.keys[frame.index++]
      out.push(JSON.stringify(key), ": ")
      open(frame.record[key], frame.depth + 1)
    }
  }
  return out.join("")
}

/**
 * The `run_code` output `{ logs, result? }` as text (PTC-3).
 *
 * @internal
 */
export const renderOutput = (
  logs: ReadonlyArray<string>,
  hasResult: boolean,
  result: JsonValue | undefined
): string => {
  const parts: Array<string> = []
  const printed = logs.join("\n")
  if (printed !== "") parts.push(printed)
  if (hasResult) {
    const text = typeof result === "string" ? result : pretty(result as JsonValue)
    if (text !== "") parts.push(text)
  }
  return parts.length === 0 ? NO_OUTPUT : parts.join("\n")
}
