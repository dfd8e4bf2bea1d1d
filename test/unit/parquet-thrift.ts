/**
 * Test-only: a generic Thrift compact-protocol decoder for Parquet footers, so tests can check
 * what actually landed in the file (field ids in the Parquet schema, page offsets) independently
 * of parquet-wasm's own reader, which would fill field ids from the ARROW:schema hint.
 * Structs decode to `{ [fieldId]: value }`; binaries stay Uint8Array.
 */
export type Thrift = Record<number, unknown>;

class Reader {
  pos = 0;
  constructor(private readonly b: Uint8Array) {}
  byte(): number {
    const v = this.b[this.pos++];
    if (v === undefined) throw new Error('thrift: unexpected end of footer');
    return v;
  }
  varint(): bigint {
    let shift = 0n,
      v = 0n;
    for (;;) {
      const x = this.byte();
      v |= BigInt(x & 0x7f) << shift;
      if ((x & 0x80) === 0) return v;
      shift += 7n;
    }
  }
  zigzag(): bigint {
    const v = this.varint();
    return (v >> 1n) ^ -(v & 1n);
  }
  value(type: number): unknown {
    switch (type) {
      case 1:
        return true;
      case 2:
        return false;
      case 3:
        return (this.byte() << 24) >> 24;
      case 4:
      case 5:
        return Number(this.zigzag());
      case 6:
        return this.zigzag();
      case 7: {
        const v = new DataView(this.b.buffer, this.b.byteOffset + this.pos, 8).getFloat64(0, true);
        this.pos += 8;
        return v;
      }
      case 8: {
        const n = Number(this.varint());
        const v = this.b.subarray(this.pos, this.pos + n);
        this.pos += n;
        return v;
      }
      case 9:
      case 10: {
        const h = this.byte();
        const size = h >> 4 === 15 ? Number(this.varint()) : h >> 4;
        const et = h & 0x0f;
        const out: unknown[] = [];
        for (let i = 0; i < size; i++) out.push(et === 1 || et === 2 ? this.byte() === 1 : this.value(et));
        return out;
      }
      case 11: {
        const size = Number(this.varint());
        const out = new Map<unknown, unknown>();
        if (size === 0) return out;
        const kv = this.byte();
        for (let i = 0; i < size; i++) out.set(this.value(kv >> 4), this.value(kv & 0x0f));
        return out;
      }
      case 12:
        return this.struct();
      default:
        throw new Error(`thrift: unknown compact type ${type}`);
    }
  }
  struct(): Thrift {
    const out: Thrift = {};
    let last = 0;
    for (;;) {
      const h = this.byte();
      if (h === 0) return out;
      const delta = h >> 4;
      const id = delta === 0 ? Number(this.zigzag()) : last + delta;
      out[id] = this.value(h & 0x0f);
      last = id;
    }
  }
}

/** FileMetaData of a whole Parquet file. */
export function parquetFooter(file: Uint8Array): Thrift {
  const tail = new TextDecoder().decode(file.subarray(file.length - 4));
  if (tail !== 'PAR1') throw new Error(`not Parquet: trailing magic ${tail}`);
  const len = new DataView(file.buffer, file.byteOffset + file.length - 8, 4).getUint32(0, true);
  return new Reader(file.subarray(file.length - 8 - len, file.length - 8)).struct();
}

/** name -> field_id of every Parquet schema element that has one. */
export function parquetFieldIds(file: Uint8Array): Map<string, number> {
  const out = new Map<string, number>();
  for (const el of parquetFooter(file)[2] as Thrift[]) {
    if (el[9] !== undefined) out.set(new TextDecoder().decode(el[4] as Uint8Array), el[9] as number);
  }
  return out;
}

/** Start of each row group: its first chunk's dictionary page, else its first data page. */
export function rowGroupStarts(file: Uint8Array): number[] {
  return (parquetFooter(file)[4] as Thrift[]).map((rg) => {
    const md = (rg[1] as Thrift[])[0]![3] as Thrift;
    const dict = md[11] as bigint | undefined,
      data = md[9] as bigint;
    return Number(dict !== undefined && dict < data ? dict : data);
  });
}
