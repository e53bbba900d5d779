/**
 * The Python SDK declarations: `TypedDict` stubs, `ToolCallError` and the `Tools` protocol, with
 * types describing the JSON side of each schema. Iterative: nesting depth is bounded only by
 * memory, `list[…]` nesting by CPython's bracket limit.
 *
 * @internal
 */
import type { JsonValue } from "../../Json.js"
import { classify, readTools } from "./sdkInput.js"
import type { SdkProperty, SdkRoot } from "./sdkInput.js"
import {
  camel,
  ClassNames,
  isPythonFieldName,
  isPythonMethodName,
  pythonComment,
  pythonDocstring,
  pythonLiteral
} from "./sdkText.js"

/** Deepest `list[…]` nesting rendered; deeper lists are `Any`. */
const MAX_LIST_DEPTH = 180

interface Symbols {
  any: boolean
  literal: boolean
  notRequired: boolean
  typedDict: boolean
}

type Task =
  | { readonly _tag: "Node"; readonly node: JsonValue; readonly base: string; readonly lists: number }
  | { readonly _tag: "Union"; readonly count: number }
  | { readonly _tag: "List" }
  | {
    readonly _tag: "Class"
    readonly name: string
    readonly properties: ReadonlyArray<SdkProperty>
    readonly open: boolean
  }

interface Context {
  readonly names: ClassNames
  readonly symbols: Symbols
  readonly classes: Array<string>
}

const DICT = "dict[str, Any]"

const renderNode = (
  node: JsonValue,
  base: string,
  lists: number,
  context: Context,
  tasks: Array<Task>,
  out: Array<string>
): void => {
  const shape = classify(node)
  const symbols = context.symbols
  switch (shape._tag) {
    case "Any":
      symbols.any = true
      out.push("Any")
      return
    case "OneOf":
      tasks.push({ _tag: "Union", count: shape.branches.length })
      for (let i = shape.branches.length - 1; i >= 0; i--) {
        tasks.push({ _tag: "Node", node: shape.branches[i], base: `${base}${i + 1}`, lists })
      }
      return
    case "Scalar":
      if (shape.literals !== undefined) {
        symbols.literal = true
        out.push(`Literal[${shape.literals.map(pythonLiteral).join(", ")}]`)
        return
      }
      out.push(SCALARS[shape.type] ?? "Any")
      return
    case "Array":
      if (lists >= MAX_LIST_DEPTH) {
        symbols.any = true
        out.push("Any")
      } else if (shape.items === undefined) {
        symbols.any = true
        out.push("list[Any]")
      } else {
        tasks.push({ _tag: "List" })
        tasks.push({ _tag: "Node", node: shape.items, base, lists: lists + 1 })
      }
      return
    case "Object": {
      const properties = shape.properties
      const fieldNames = properties.every((property) => isPythonFieldName(property.name))
      if ((properties.length === 0 && shape.open) || !fieldNames) {
        symbols.any = true
        out.push(DICT)
        return
      }
      const name = context.names.allocate(base)
      symbols.typedDict = true
      tasks.push({ _tag: "Class", name, properties, open: shape.open })
      for (let i = properties.length - 1; i >= 0; i--) {
        tasks.push({ _tag: "Node", node: properties[i].schema, base: `${name}${camel(properties[i].name)}`, lists: 0 })
      }
      return
    }
  }
}

const SCALARS: Readonly<Record<string, string>> = {
  string: "str",
  number: "float",
  integer: "int",
  boolean: "bool",
  null: "None"
}

const renderClass = (
  name: string,
  properties: ReadonlyArray<SdkProperty>,
  open: boolean,
  types: ReadonlyArray<string>,
  symbols: Symbols
): string => {
  const lines = [`class ${name}(TypedDict):`]
  for (let i = 0; i < properties.length; i++) {
    const property = properties[i]
    const doc = pythonComment(property.description)
    if (doc !== undefined) lines.push(`    # ${doc}`)
    if (property.required) {
      lines.push(`    ${property.name}: ${types[i]}`)
    } else {
      symbols.notRequired = true
      lines.push(`    ${property.name}: NotRequired[${types[i]}]`)
    }
  }
  if (open) lines.push("    # Additional keys beyond those declared are allowed.")
  if (lines.length === 1) lines.push("    pass")
  return lines.join("\n")
}

const typeOf = (schema: JsonValue, base: string, context: Context): string => {
  const tasks: Array<Task> = [{ _tag: "Node", node: schema, base, lists: 0 }]
  const out: Array<string> = []
  for (let task = tasks.pop(); task !== undefined; task = tasks.pop()) {
    switch (task._tag) {
      case "Node":
        renderNode(task.node, task.base, task.lists, context, tasks, out)
        break
      case "Union":
        out.push(out.splice(out.length - task.count, task.count).join(" | "))
        break
      case "List":
        out.push(`list[${out.pop()!}]`)
        break
      case "Class": {
        const types = out.splice(out.length - task.properties.length, task.properties.length)
        context.classes.push(renderClass(task.name, task.properties, task.open, types, context.symbols))
        out.push(task.name)
        break
      }
    }
  }
  return out[0]
}

const rootType = (root: SdkRoot, base: string, context: Context): string => {
  if (root._tag === "Schema") return typeOf(root.schema, base, context)
  context.symbols.any = true
  return "Any"
}

const RESERVED_NAMES = ["Any", "Literal", "NotRequired", "Protocol", "TypedDict", "ToolCallError", "Tools"]

/**
 * The Python fence content for `tools` (sorted by name). Never throws.
 *
 * @internal
 */
export const declarations = (tools: unknown): string => {
  const entries = readTools(tools)
  const context: Context = {
    names: new ClassNames(RESERVED_NAMES),
    symbols: { any: false, literal: false, notRequired: false, typedDict: false },
    classes: []
  }
  const members: Array<string> = []
  let methods = 0
  for (const entry of entries) {
    const prefix = camel(entry.name)
    const args = rootType(entry.parameters, `${prefix}Args`, context)
    const output = rootType(entry.output, `${prefix}Output`, context)
    if (isPythonMethodName(entry.name)) {
      methods++
      const doc = pythonDocstring(entry.description)
      const signature = `    async def ${entry.name}(self, args: ${args}) -> ${output}:`
      members.push(doc === undefined ? `${signature} ...` : `${signature}\n        """${doc}"""`)
    } else {
      const doc = pythonComment(entry.description)
      const call = `    # tools[${JSON.stringify(entry.name)}](args: ${args}) -> ${output}`
      members.push(doc === undefined ? call : `${call}\n    #   ${doc}`)
    }
  }
  if (methods === 0) members.unshift("    pass")
  const { any, literal, notRequired, typedDict } = context.symbols
  const symbols = [
    ...(any ? ["Any"] : []),
    ...(literal ? ["Literal"] : []),
    ...(notRequired ? ["NotRequired"] : []),
    "Protocol",
    ...(typedDict ? ["TypedDict"] : [])
  ]
  return [
    `from typing import ${symbols.join(", ")}`,
    "class ToolCallError(Exception):\n    toolName: str",
    ...context.classes,
    `class Tools(Protocol):\n${members.join("\n")}`,
    "tools: Tools"
  ].join("\n\n")
}
