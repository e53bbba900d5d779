/**
 * The fixed instruction prose that opens each `tools:sdk` section.
 *
 * @internal
 */

const ARGUMENTS = (language: string): string =>
  `\`run_code\` runs one ${language} program that calls the tools declared below. It takes two required ` +
  "string arguments: `description`, a short active-voice summary of what the program does (5-10 words, shown " +
  "to the user), and `code`, the body of an async function (top-level `await` and `return` work)."

const OVERLAP =
  "calls that change state run alone, one at a time, in the order the program made them. Sequence dependent " +
  "work with `await`."

const OUTPUT = (print: string): string =>
  `- Only what the program prints (\`${print}\`) and the value it returns are program output. A successful ` +
  "tool result that carries an image is attached to the conversation after the run; every other intermediate " +
  "result stays out of the conversation, so print or return what you need."

/** @internal */
export const TYPESCRIPT = [
  "## Writing code for run_code",
  "",
  ARGUMENTS("TypeScript"),
  "",
  "- Call a tool with `await tools.name(args)`; a tool whose name is not a plain identifier is called through " +
  "its quoted key: `await tools[\"my-mcp.tool\"](args)`. Pass an arguments object (`{}` when there are none).",
  "- Every call resolves to the tool's typed canonical JSON value (its `ToolOutputMap` entry). Arguments must be " +
  "lossless JSON: plain objects, arrays, strings, finite numbers, booleans and `null` (no `undefined`, `NaN`, " +
  "`-0`, `Date`, `Map`, class instances or functions).",
  "- A failed call rejects with `ToolCallError`: its `toolName` names the tool and its `message` says what went " +
  "wrong in plain words. Catch it with `try`/`catch` to handle the failure and continue.",
  "- Independent read-only calls MAY overlap under `Promise.all` (start them together, then await the " +
  `array); ${OVERLAP}`,
  OUTPUT("console.log"),
  "- Write erasable syntax only: no `enum`, no namespaces, no constructor parameter properties. Type " +
  "annotations are advisory; the code runs type-stripped, as JavaScript.",
  "",
  "The available tools:"
].join("\n")

/** @internal */
export const PYTHON = [
  "## Writing code for run_code",
  "",
  ARGUMENTS("Python"),
  "",
  "- At run time exactly two declared names are bound: `tools` and `ToolCallError`. The `TypedDict` classes " +
  "are static stubs that do not exist at run time: build arguments as plain dicts and lists (constructing " +
  "`FooArgs(...)` raises `NameError`).",
  "- Call a tool with `await tools.name(args)`. A tool whose name is exotic, a reserved word or starts with an " +
  "underscore is listed as a comment and called by subscript: `await tools[\"my-mcp.tool\"](args)`. Pass an " +
  "arguments dict (`{}` when there are none).",
  "- Every call resolves to the tool's typed canonical JSON value (its declared return type). Arguments must be " +
  "lossless JSON: dicts with string keys, lists, strings, finite numbers, booleans and `None`.",
  "- A failed call raises `ToolCallError`: its `toolName` names the tool and its message says what went wrong " +
  "in plain words. Catch it with `try`/`except ToolCallError` to handle the failure and continue.",
  "- Independent read-only calls MAY overlap under `asyncio.gather` (`import asyncio` first, start them " +
  `together, then await the gather); ${OVERLAP}`,
  OUTPUT("print"),
  "- The value the program returns must be lossless JSON as well.",
  "",
  "The available tools:"
].join("\n")
