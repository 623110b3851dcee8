import { stripAnsi } from './colours.ts';

/**
 * Lays out rows under a header in columns two spaces apart. Cells may carry
 * colour: widths are measured on what the terminal shows. The last column is
 * not padded, so long messages do not leave trailing blanks.
 */
export function formatTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
): string {
  const all = [header, ...rows];
  const widths = header.map((_, column) =>
    Math.max(...all.map((row) => stripAnsi(row[column] ?? '').length)),
  );
  return all
    .map((row) =>
      header
        .map((_, column) => {
          const cell = row[column] ?? '';
          const last = column === header.length - 1;
          return last ? cell : cell + ' '.repeat((widths[column] ?? 0) - stripAnsi(cell).length);
        })
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
