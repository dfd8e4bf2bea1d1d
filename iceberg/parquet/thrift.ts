/**
 * The writing half of Thrift's compact protocol, for the few Parquet structs the flat encoder
 * writes (page headers and the file footer).
 *
 * Why hand-rolled: Parquet's footer is a Thrift struct, and the `thrift` npm package's compact
 * protocol works through its RPC transports and generated classes; the encoding itself is varints,
 * zigzag and one header byte per field (thrift/doc/specs/thrift-compact-protocol.md), about a page
 * of code. Structs are written as `[fieldId, value]` lists so the field ids stay next to the
 * parquet.thrift names they come from. Everything written is read back by parquet-rs
 * (readFooterFacts) and pyarrow in the tests.
 */

/** Compact-protocol type codes. */
const T = {
  TRUE: 1,
  FALSE: 2,
  I32: 5,
  I64: 6,
  BINARY: 8,
  LIST: 9,
  STRUCT: 12,
} as const;

/** A struct field's value: its type, then the value (bools carry theirs in the type). */
export type TValue =
  | { t: 'bool'; v: boolean }
  | { t: 'i32'; v: number }
  | { t: 'i64'; v: bigint | number }
  | { t: 'binary'; v: Uint8Array | string }
  | { t: 'struct'; v: TStruct }
  | { t: 'list'; elem: 'i32' | 'binary' | 'struct'; v: ReadonlyArray<number | string | Uint8Array | TStruct> };

/** A struct: [field id, value] in ascending field-id order; undefined values are left out. */
export type TStruct = ReadonlyArray<readonly [number, TValue | undefined]>;

export const i32 = (v: number): TValue => ({ t: 'i32', v });
export const i64 = (v: bigint | number): TValue => ({ t: 'i64', v });
export const bool = (v: boolean): TValue => ({ t: 'bool', v });
export const bin = (v: Uint8Array | string): TValue => ({ t: 'binary', v });
export const struct = (v: TStruct): TValue => ({ t: 'struct', v });
export const list = (elem: 'i32' | 'binary' | 'struct', v: ReadonlyArray<number | string | Uint8Array | TStruct>): TValue => ({
  t: 'list',
  elem,
  v,
});

const ELEM: Record<'i32' | 'binary' | 'struct', number> = { i32: T.I32, binary: T.BINARY, struct: T.STRUCT };
const utf8 = new TextEncoder();

class CompactWriter {
  private buf = new Uint8Array(256);
  private pos = 0;

  bytes(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
  }

  private byte(b: number): void {
    this.room(1);
    this.buf[this.pos++] = b;
  }

  /** Unsigned LEB128 varint of a non-negative bigint. */
  private varint(v: bigint): void {
    this.room(10);
    while (v >= 0x80n) {
      this.buf[this.pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.pos++] = Number(v);
  }

  /** Small unsigned varint (lengths, sizes) without bigint. */
  private uvarint(v: number): void {
    this.room(5);
    while (v >= 0x80) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[this.pos++] = v;
  }

  private zigzag32(v: number): void {
    this.uvarint(((v << 1) ^ (v >> 31)) >>> 0);
  }

  private zigzag64(v: bigint): void {
    const x = BigInt.asIntN(64, v);
    this.varint(BigInt.asUintN(64, (x << 1n) ^ (x >> 63n)));
  }

  private binary(v: Uint8Array | string): void {
    const b = typeof v === 'string' ? utf8.encode(v) : v;
    this.uvarint(b.length);
    this.room(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  private typeCode(v: TValue): number {
    switch (v.t) {
      case 'bool':
        return v.v ? T.TRUE : T.FALSE;
      case 'i32':
        return T.I32;
      case 'i64':
        return T.I64;
      case 'binary':
        return T.BINARY;
      case 'list':
        return T.LIST;
      case 'struct':
        return T.STRUCT;
    }
  }

  struct(fields: TStruct): this {
    let last = 0;
    for (const [id, v] of fields) {
      if (v === undefined) continue;
      const type = this.typeCode(v);
      const delta = id - last;
      if (delta > 0 && delta <= 15) this.byte((delta << 4) | type);
      else {
        this.byte(type);
        this.zigzag32(id);
      }
      last = id;
      this.value(v);
    }
    this.byte(0); // stop
    return this;
  }

  private value(v: TValue): void {
    switch (v.t) {
      case 'bool':
        return; // in the field header
      case 'i32':
        return this.zigzag32(v.v);
      case 'i64':
        return this.zigzag64(BigInt(v.v));
      case 'binary':
        return this.binary(v.v);
      case 'struct':
        this.struct(v.v);
        return;
      case 'list': {
        const n = v.v.length;
        const et = ELEM[v.elem];
        if (n < 15) this.byte((n << 4) | et);
        else {
          this.byte(0xf0 | et);
          this.uvarint(n);
        }
        for (const e of v.v) {
          if (v.elem === 'i32') this.zigzag32(e as number);
          else if (v.elem === 'binary') this.binary(e as Uint8Array | string);
          else this.struct(e as TStruct);
        }
      }
    }
  }
}

/** One struct, compact-encoded. */
export function encodeStruct(fields: TStruct): Uint8Array {
  return new CompactWriter().struct(fields).bytes();
}
