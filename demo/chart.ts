/**
 * A small text chart in Unicode braille (2x4 dots per character), no dependency: a series over time
 * as a line, with its maximum and 0 on the left and event markers (a kill, a restart) on a line
 * below. Pure (test/unit/demo-progress.test.ts).
 */

const BRAILLE = 0x2800;
// Dot bits of a braille cell by [column][row from the top].
const DOTS = [
  [0x01, 0x02, 0x04, 0x40],
  [0x08, 0x10, 0x20, 0x80],
];

export interface ChartMarker {
  atS: number;
  char: string;
}

/**
 * `points` ([time s, value], time ascending) drawn over [0, endS] in `width` characters and
 * `height` rows; each dot column takes the last value at or before its time (a step line), and
 * consecutive columns are joined vertically so a jump reads as a line, not two dots.
 */
export function brailleChart(
  title: string,
  points: readonly (readonly [number, number])[],
  opts: { width?: number; height?: number; endS?: number; markers?: ChartMarker[] } = {},
): string[] {
  const width = opts.width ?? 60;
  const height = opts.height ?? 4;
  const endS = opts.endS ?? points.at(-1)?.[0] ?? 1;
  const max = Math.max(1, ...points.map((p) => p[1]));
  const xDots = width * 2;
  const yDots = height * 4;
  const grid = Array.from({ length: height }, () => new Array<number>(width).fill(0));
  const set = (x: number, y: number) => {
    // y = 0 is the bottom dot row.
    const row = yDots - 1 - y;
    grid[Math.floor(row / 4)]![Math.floor(x / 2)]! |= DOTS[x % 2]![row % 4]!;
  };
  let prev: number | null = null;
  for (let x = 0, i = -1; x < xDots; x++) {
    const t = (x / (xDots - 1)) * endS;
    while (i + 1 < points.length && points[i + 1]![0] <= t) i++;
    if (i < 0) continue;
    const y = Math.min(yDots - 1, Math.max(0, Math.round((points[i]![1] / max) * (yDots - 1))));
    const [lo, hi] = prev === null ? [y, y] : [Math.min(prev, y), Math.max(prev, y)];
    for (let yy = lo; yy <= hi; yy++) set(x, yy);
    prev = y;
  }
  const label = (s: string) => s.padStart(7);
  const lines = [`${title}`];
  grid.forEach((row, r) => {
    const axis = r === 0 ? label(String(max)) : r === height - 1 ? label('0') : label('');
    lines.push(`${axis} ┤${row.map((bits) => String.fromCharCode(BRAILLE + bits)).join('')}`);
  });
  if (opts.markers?.length) {
    const marks = new Array<string>(width).fill(' ');
    for (const m of opts.markers) marks[Math.min(width - 1, Math.max(0, Math.round((m.atS / endS) * (width - 1))))] = m.char;
    lines.push(`${label('')}  ${marks.join('').trimEnd()}`);
  }
  lines.push(`${label('')}  0 s${`${Math.round(endS)} s`.padStart(width - 3)}`);
  return lines;
}
