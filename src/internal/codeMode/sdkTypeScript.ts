/**
 * The TypeScript SDK declarations: `ToolArgsMap`, `ToolOutputMap`, `ToolCallError` and `tools`,
 * with types describing the JSON side of each schema. Iterative: nesting depth is bounded only
 * by memory.
 *
 * @internal
 */
import type { JsonValue } from "../../Json.js"
import { classify, readTools } from "./sdkInput.js"
import type { SdkRoot } from "./sdkInput.js"
import { jsDoc, tsKey, tsLiteral } from "./sdkText.js"

interface Rendered {
  readonly text: string
  readonly bar: boolean
}

interface Member {
  readonly key: string
  readonly optional: boolean
  readonly doc: string | undefined
}

type Task =
  | { readonly _tag: "Node"; readonly node: JsonValue; readonly indent: string }
  | { readonly _tag: "Union"; readonly count: number }
  | { readonly _tag: "Array" }
  | {
    readonly _tag: "Object"
    readonly indent: string
    readonly members: ReadonlyArray<Member>
    readonly open: boolean
  }

const JSON_VALUE = "JsonValue"
const OPEN_RECORD = "Record<string, JsonValue>"
const hasBar = (text: string): boolean => text.includes("|") || text.includes("&")

const renderNode = (node: JsonValue, indent: string, tasks: Array<Task>, out: Array<Rendered>): void => {
  const shape = classify(node)
  switch (shape._tag) {
    case "Any":
      out.push({ text: JSON_VALUE, bar: false })
      return
    case "OneOf":
      tasks.push({ _tag: "Union", count: shape.branches.length })
      for (let i = shape.branches.length - 1; i >= 0; i--) {
        tasks.push({ _tag: "Node", node: shape.branches[i], indent })
      }
      return
    case "Scalar": {
      if (shape.literals !== undefined) {
        const text = shape.literals.map(tsLiteral).join(" | ")
        out.push({ text, bar: hasBar(text) })
        return
      }
      const text = shape.type === "integer" ? "number" : shape.type
      out.push({ text, bar: false })
      return
    }
    case "Array":
      if (shape.items === undefined) {
        out.push({ text: `${JSON_VALUE}[]`, bar: false })
      } else {
        tasks.push({ _tag: "Array" })
        tasks.push({ _tag: "Node", node: shape.items, indent })
      }
      return
    case "Object": {
      if (shape.properties.length === 0) {
        out.push({ text: shape.open ? OPEN_RECORD : "Record<string, never>", bar: false })
        return
      }
      const members = shape.properties.map((property) => ({
        key: tsKey(property.name),
        optional: !property.required,
        doc: jsDoc(property.description)
      }))
      tasks.push({ _tag: "Object", indent, members, open: shape.open })
      const inner = `${indent}  `
      for (let i = shape.properties.length - 1; i >= 0; i--) {
        tasks.push({ _tag: "Node", node: shape.properties[i].schema, indent: inner })
      }
      return
    }
  }
}

const renderObject = (
  indent: string,
  members: ReadonlyArray<Member>,
  open: boolean,
  types: ReadonlyArray<Rendered>
): Rendered => {
  const inner = `${indent}  `
  let text = "{\n"
  let bar = open
  for (let i = 0; i < members.length; i++) {
    const member = members[i]
    const type = types[i]
    if (member.doc !== undefined) {
      text += `${inner}/** ${member.doc} */\n`
      bar ||= hasBar(member.doc)
    }
    text += `${inner}${member.key}${member.optional ? "?" : ""}: ${type.text};\n`
    bar ||= type.bar || hasBar(member.key)
  }
  text += `${indent}}`
  if (open) text += ` & ${OPEN_RECORD}`
  return { text, bar }
}

/**
 * The TypeScript type of a detached subset schema; members of multi-line object literals are
 * indented two spaces deeper than `indent`, the closing brace sits at `indent`.
 *
 * @internal
 */
export const typeOf = (schema: JsonValue, indent: string): string => {
  const tasks: Array<Task> = [{ _tag: "Node", node: schema, indent }]
  const out: Array<Rendered> = []
  for (let task = tasks.pop(); task !== undefined; task = tasks.pop()) {
    switch (task._tag) {
      case "Node":
        renderNode(task.node, task.indent, tasks, out)
        break
      case "Union": {
        const branches = out.splice(out.length - task.count, task.count)
        out.push({ text: branches.map((branch) => branch.text).join(" | "), bar: true })
        break
      }
      case "Array": {
        const item = out.pop()!
        out.push({ text: item.bar ? `(${item.text})[]` : `${item.text}[]`, bar: item.bar })
        break
      }
      case "Object": {
        const types = out.splice(out.length - task.members.length, task.members.length)
        out.push(renderObject(task.indent, task.members, task.open, types))
        break
      }
    }
  }
  return out[0].text
}

const rootType = (root: SdkRoot, indent: string): string =>
  root._tag === "Schema" ? typeOf(root.schema, indent) : root._tag === "Absent" ? JSON_VALUE : "unknown"

const block = (header: string, members: ReadonlyArray<string>): string =>
  members.length === 0 ? `${header} {}` : `${header} {\n${members.join("\n")}\n}`

/**
 * The TypeScript fence content for `tools` (sorted by name). Never throws.
 *
 * @internal
 */
export const declarations = (tools: unknown): string => {
  const entries = readTools(tools)
  const args: Array<string> = []
  const outputs: Array<string> = []
  for (const entry of entries) {
    const key = tsKey(entry.name)
    const doc = jsDoc(entry.description)
    args.push(
      `${doc === undefined ? "" : `  /** ${doc} */\n`}  ${key}: ${rootType(entry.parameters, "  ")};`
    )
    outputs.push(`  ${key}: ${rootType(entry.output, "  ")};`)
  }
  return [
    "type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }",
    block("interface ToolArgsMap", args),
    block("interface ToolOutputMap", outputs),
    "type ToolName = keyof ToolOutputMap",
    "declare class ToolCallError extends Error {\n  readonly name: \"ToolCallError\";\n" +
    "  readonly toolName: ToolName;\n}",
    "declare const tools: {\n  [K in ToolName]: (args: ToolArgsMap[K]) => Promise<ToolOutputMap[K]>;\n}"
  ].join("\n\n")
}
