/**
 * Sets of sample indices as sorted, disjoint half-open ranges `[start, end)`, so that "samples
 * 0..4,999 minus the 37 already done" fits in a few bytes of workflow history.
 */
/** Half-open ranges `[start, end)` of sample indices (index = (epoch - 1) × dataset size + row). */
export type IndexRanges = [number, number][];

/** Ranges covering `[0, total)` minus the indices in `exclude`. */
export function rangesExcept(total: number, exclude: Iterable<number>): IndexRanges {
  const skip = [...new Set(exclude)].filter((i) => i >= 0 && i < total).sort((a, b) => a - b);
  const ranges: IndexRanges = [];
  let start = 0;
  for (const i of skip) {
    if (i > start) ranges.push([start, i]);
    start = i + 1;
  }
  if (start < total) ranges.push([start, total]);
  return ranges;
}

export function countRanges(ranges: IndexRanges): number {
  return ranges.reduce((sum, [start, end]) => sum + (end - start), 0);
}

/** Removes and returns up to `n` indices from the front of `ranges` (which it mutates). */
export function takeFromRanges(ranges: IndexRanges, n: number): number[] {
  const taken: number[] = [];
  while (taken.length < n && ranges.length > 0) {
    const first = ranges[0];
    const count = Math.min(n - taken.length, first[1] - first[0]);
    for (let i = 0; i < count; i++) taken.push(first[0] + i);
    first[0] += count;
    if (first[0] >= first[1]) ranges.shift();
  }
  return taken;
}
