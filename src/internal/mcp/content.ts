/**
 * MCP content blocks → this library's model content, over an already-detached JSON copy of
 * the server's result (each field is read once, from the copy).
 *
 * @internal
 */
import type { Content, ContentBlock } from "../../Content.js"
import * as Json from "../../Json.js"
import type { JsonObject, JsonValue } from "../../Json.js"

const LABEL_LIMIT = 200

const clip = (value: string): string => value.length <= LABEL_LIMIT ? value : `${value.slice(0, LABEL_LIMIT)}…`

const stringField = (record: JsonObject, key: string): string | undefined => {
  const value = record[key]
  return typeof value === "string" ? value : undefined
}

const describe = (text: string): ContentBlock => ({ type: "text", text })

const resourceBlock = (resource: JsonValue | undefined): ContentBlock => {
  if (!Json.isPlainRecord(resource)) return describe("[malformed resource content]")
  const record = resource as JsonObject
  const uri = stringField(record, "uri")
  const text = stringField(record, "text")
  const mimeType = stringField(record, "mimeType")
  const where = uri === undefined ? "" : ` ${clip(uri)}`
  if (text !== undefined) return describe(`[resource${where}]\n${text}`)
  return describe(`[binary resource${where}${mimeType === undefined ? "" : ` (${clip(mimeType)})`}]`)
}

const blockOf = (block: JsonValue): ContentBlock => {
  if (!Json.isPlainRecord(block)) return describe("[malformed content block]")
  const record = block as JsonObject
  const type = record.type
  switch (type) {
    case "text": {
      const text = stringField(record, "text")
      return text === undefined ? describe("[malformed text content]") : { type: "text", text }
    }
    case "image": {
      const data = stringField(record, "data")
      const mimeType = stringField(record, "mimeType")
      return data === undefined || mimeType === undefined
        ? describe("[malformed image content]")
        : { type: "image", data, mimeType }
    }
    case "audio": {
      const mimeType = stringField(record, "mimeType")
      return describe(mimeType === undefined ? "[audio content]" : `[audio content (${clip(mimeType)})]`)
    }
    case "resource":
      return resourceBlock(record.resource)
    case "resource_link": {
      const name = stringField(record, "name")
      const uri = stringField(record, "uri")
      return describe(`[resource link:${name === undefined ? "" : ` ${clip(name)}`}${uri === undefined ? "" : ` ${clip(uri)}`}]`)
    }
    default:
      return describe(typeof type === "string" ? `[${clip(type)} content]` : "[unsupported content block]")
  }
}

/**
 * Text and image blocks as they are; audio, resource links and binary resources described in a
 * text block; embedded text resources as their text; anything malformed described.
 *
 * @internal
 */
export const render = (blocks: ReadonlyArray<JsonValue>): Content => blocks.map(blockOf)

/**
 * The text of rendered content for an error message: text blocks joined by newlines, other
 * blocks as `[<type> content]`.
 *
 * @internal
 */
export const textOf = (content: Content): string =>
  content.map((block) => block.type === "text" ? block.text : `[${block.type} content]`).join("\n")
