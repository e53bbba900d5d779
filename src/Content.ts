/**
 * Model-facing content blocks and deferred user messages (DECISIONS D-3, D-13).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Json from "./Json.js"
import type { JsonValue } from "./Json.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface TextBlock {
  readonly type: "text"
  readonly text: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ImageBlock {
  readonly type: "image"
  /** base64 data */
  readonly data: string
  readonly mimeType: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ReasoningBlock {
  readonly type: "reasoning"
  readonly text: string
}

/**
 * One model-facing content block.
 *
 * @since 0.1.0
 * @category models
 */
export type ContentBlock = TextBlock | ImageBlock | ReasoningBlock

/**
 * Model-facing content: an array of blocks.
 *
 * @since 0.1.0
 * @category models
 */
export type Content = ReadonlyArray<ContentBlock>

/**
 * Schema of one {@link ContentBlock}: a `text`, `image` or `reasoning` block, discriminated by
 * `type`. Decoding strips keys the block type does not declare (pass
 * `onExcessProperty: "preserve"` to keep them).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContentBlockSchema: Schema.Schema<ContentBlock> = Schema.Union(
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("image"), data: Schema.String, mimeType: Schema.String }),
  Schema.Struct({ type: Schema.Literal("reasoning"), text: Schema.String })
).annotations({ identifier: "ContentBlock" })

/**
 * Schema of {@link Content}: an array of {@link ContentBlockSchema} blocks.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContentSchema: Schema.Schema<Content> = Schema.Array(ContentBlockSchema).annotations({
  identifier: "Content"
})

/**
 * Where a deferred message came from (e.g. `{ kind: "plugin", plugin: "tools-code-mode" }`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ContextSource {
  readonly kind: string
  readonly [key: string]: JsonValue
}

/**
 * A user-role message deferred by a tool: appended by the loop after the call's result.
 *
 * @since 0.1.0
 * @category models
 */
export interface UserMessage {
  readonly id: string
  readonly role: "user"
  readonly content: Content
  readonly source?: ContextSource
}

/**
 * What a body passes to `deferContext`: the runtime assigns an `id` when none is given.
 *
 * @since 0.1.0
 * @category models
 */
export interface UserMessageInput {
  readonly id?: string | undefined
  readonly content: Content
  readonly source?: ContextSource | undefined
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const text = (value: string): TextBlock => ({ type: "text", text: value })

/**
 * @since 0.1.0
 * @category models
 */
export type Checked<A> =
  | { readonly _tag: "Valid"; readonly value: A }
  | { readonly _tag: "Invalid"; readonly reason: string }

const isString = (u: JsonValue | undefined): u is string => typeof u === "string"

const blockProblem = (block: JsonValue, index: number): string | undefined => {
  if (!Json.isPlainRecord(block)) return `content[${index}] must be a content block object`
  const record = block as { readonly [key: string]: JsonValue }
  switch (record.type) {
    case "text":
    case "reasoning":
      return isString(record.text) ? undefined : `content[${index}].text must be a string`
    case "image":
      return isString(record.data) && isString(record.mimeType)
        ? undefined
        : `content[${index}] image blocks need string data and mimeType`
    default:
      return `content[${index}].type must be "text", "image" or "reasoning"`
  }
}

/**
 * Checks the shape of an already-detached lossless JSON value as content (an array of
 * blocks), without copying it.
 *
 * @since 0.1.0
 * @category guards
 */
export const checkShape = (value: JsonValue): Checked<Content> => {
  if (!Array.isArray(value)) return { _tag: "Invalid", reason: "content must be an array of content blocks" }
  const blocks = value as ReadonlyArray<JsonValue>
  for (let i = 0; i < blocks.length; i++) {
    const problem = blockProblem(blocks[i]!, i)
    if (problem !== undefined) return { _tag: "Invalid", reason: problem }
  }
  return { _tag: "Valid", value: value as unknown as Content }
}

/**
 * Checks that `input` is lossless JSON shaped as content (an array of blocks) and returns a
 * detached, deep-frozen copy. Total: getters that throw make it invalid.
 *
 * @since 0.1.0
 * @category constructors
 */
export const check = (input: unknown): Checked<Content> => {
  const snap = Json.snapshotFrozen(input)
  if (snap._tag !== "Lossless") return { _tag: "Invalid", reason: "content must be lossless JSON" }
  return checkShape(snap.value)
}

/**
 * True when `input` is valid content (see {@link check}).
 *
 * @since 0.1.0
 * @category guards
 */
export const isContent = (input: unknown): input is Content => check(input)._tag === "Valid"

/**
 * Checks a deferred message (D-13) and returns a detached frozen {@link UserMessage}, using
 * `makeId` when the input has no `id`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const checkUserMessage = (input: unknown, makeId: () => string): Checked<UserMessage> => {
  const snap = Json.snapshot(input)
  if (snap._tag !== "Lossless" || !Json.isPlainRecord(snap.value)) {
    return { _tag: "Invalid", reason: "a deferred context must be a lossless JSON user message object" }
  }
  const record = snap.value as { readonly [key: string]: JsonValue }
  const content = check(record.content)
  if (content._tag === "Invalid") return content
  const id = record.id
  if (id !== undefined && typeof id !== "string") {
    return { _tag: "Invalid", reason: "a deferred context id must be a string" }
  }
  const source = record.source
  if (source !== undefined && !(Json.isPlainRecord(source) && typeof (source as ContextSource).kind === "string")) {
    return { _tag: "Invalid", reason: "a deferred context source must be an object with a string kind" }
  }
  const message: UserMessage = source === undefined
    ? { id: id ?? makeId(), role: "user", content: content.value }
    : { id: id ?? makeId(), role: "user", content: content.value, source: source as ContextSource }
  return { _tag: "Valid", value: Json.deepFreeze(message) }
}
