/**
 * Maps offsets in a text to 1-based line numbers, with a binary search over
 * line starts so files with many documents stay linear to index.
 */
export function lineIndex(source: string): (offset: number) => number {
  const starts = [0];
  for (let i = source.indexOf('\n'); i !== -1; i = source.indexOf('\n', i + 1)) starts.push(i + 1);
  return (offset: number): number => {
    if (offset <= 0) return 1;
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if ((starts[middle] ?? 0) <= offset) low = middle;
      else high = middle - 1;
    }
    return low + 1;
  };
}
