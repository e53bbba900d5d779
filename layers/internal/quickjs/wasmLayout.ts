/**
 * Where the engine's C stack starts in linear memory: the initial value of the module's first
 * global, which Emscripten builds use as the stack pointer (the stack grows down from there).
 * Read from the WebAssembly binary's global section.
 *
 * @internal
 */

const GLOBAL_SECTION = 6
const I32 = 0x7f
const I32_CONST = 0x41
const END = 0x0b

/** @internal */
export const stackHighOf = (bytes: Uint8Array): number | undefined => {
  let p = 8
  const unsigned = (): number => {
    let result = 0
    let shift = 0
    for (;;) {
      if (p >= bytes.length || shift > 28) throw new Error("truncated")
      const byte = bytes[p++]
      result |= (byte & 0x7f) << shift
      shift += 7
      if ((byte & 0x80) === 0) return result >>> 0
    }
  }
  const signed = (): number => {
    let result = 0
    let shift = 0
    let byte = 0
    do {
      if (p >= bytes.length || shift > 28) throw new Error("truncated")
      byte = bytes[p++]
      result |= (byte & 0x7f) << shift
      shift += 7
    } while ((byte & 0x80) !== 0)
    if (shift < 32 && (byte & 0x40) !== 0) result |= ~0 << shift
    return result
  }
  try {
    if (bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) return undefined
    while (p < bytes.length) {
      const id = bytes[p++]
      const size = unsigned()
      const end = p + size
      if (id === GLOBAL_SECTION) {
        if (unsigned() === 0) return undefined
        const type = bytes[p++]
        const mutable = bytes[p++]
        if (type !== I32 || mutable !== 1 || bytes[p++] !== I32_CONST) return undefined
        const value = signed()
        return bytes[p] === END && value > 0 ? value : undefined
      }
      p = end
    }
    return undefined
  } catch {
    return undefined
  }
}
