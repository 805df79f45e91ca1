/**
 * @module A plain-text table: a header row and aligned columns, two spaces apart, widths
 * measured on the text (not on the colour codes a cell is painted with). No borders, no
 * trailing spaces, one line per row: output `grep`, `awk` and `cut` can take apart.
 */
import type { Paint } from './terminal-style.js';

/** A column of a {@link formatTable}. */
export interface TableColumn {
  readonly header: string;
  /** Numbers read best right-aligned; default `left`. */
  readonly align?: 'left' | 'right';
}

/** A cell: its text, and optionally how to paint it once padded. */
export type TableCell = string | { readonly text: string; readonly paint?: Paint | undefined };

/** Options of {@link formatTable}. */
export interface TableOptions {
  /** How to paint the header row (`style.bold`); default unchanged. */
  readonly header?: Paint;
  /** Spaces between columns; default 2. */
  readonly gap?: number;
}

const textOf = (cell: TableCell): string => (typeof cell === 'string' ? cell : cell.text);

/** Width in characters: a surrogate pair (an emoji, say) counts once. */
const widthOf = (text: string): number =>
  text.length - (text.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g)?.length ?? 0);

/**
 * The table as lines, each ending in `\n`: the header, then a line per row. A row shorter
 * than the columns is padded with empty cells; a cell's newlines become spaces.
 *
 * @example
 * formatTable([{ header: 'RUN' }, { header: 'TOKENS', align: 'right' }], [['run_1', '1,204']]);
 * // 'RUN    TOKENS\nrun_1   1,204\n'
 */
export function formatTable(
  columns: readonly TableColumn[],
  rows: readonly (readonly TableCell[])[],
  options: TableOptions = {},
): string {
  const gap = ' '.repeat(options.gap ?? 2);
  const cellsOf = (row: readonly TableCell[]): { text: string; paint?: Paint | undefined }[] =>
    columns.map((_, i) => {
      const cell = row[i] ?? '';
      const text = textOf(cell).replace(/\r?\n/g, ' ');
      return typeof cell === 'string' ? { text } : { text, paint: cell.paint };
    });
  const header = columns.map((c) => ({ text: c.header, paint: options.header }));
  const body = rows.map(cellsOf);
  const widths = columns.map((_, i) =>
    Math.max(widthOf(header[i]?.text ?? ''), ...body.map((r) => widthOf(r[i]?.text ?? ''))),
  );
  const line = (cells: readonly { text: string; paint?: Paint | undefined }[]): string => {
    const last = cells.length - 1;
    const parts = cells.map((cell, i) => {
      const pad = ' '.repeat((widths[i] ?? 0) - widthOf(cell.text));
      const right = columns[i]?.align === 'right';
      // The last column, left-aligned, is not padded: no trailing spaces.
      const padded = right ? pad + cell.text : i === last ? cell.text : cell.text + pad;
      if (!cell.paint || cell.text === '') return padded;
      return right
        ? pad + cell.paint(cell.text)
        : cell.paint(cell.text) + padded.slice(cell.text.length);
    });
    return `${parts.join(gap).trimEnd()}\n`;
  };
  return [header, ...body].map(line).join('');
}
