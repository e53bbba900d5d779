/** @internal */
export {
  /** @internal */
  violations
} from "./jsonSchemaAssert.js"
export {
  /** @internal */
  compile,
  /** @internal */
  validate
} from "./jsonSchemaValidate.js"
