import { existsSync, readFileSync } from "node:fs";

/** One trace's anchor table from the traces README: row name → capacity → hit ratio in %. */
export interface AnchorTable {
  capacities: number[];
  rows: Map<string, Map<number, number>>;
}

/**
 * Parse the "Anchors" tables of the traces README. A table follows a bold heading (`**gli**`,
 * `**zipf s = 0.93** ...`); its first column names the row, its header row lists the capacities.
 * Returns tables keyed by the heading's first word (gli, web07, web12, zipf).
 */
export function readAnchors(readmePath: string): Map<string, AnchorTable> {
  const tables = new Map<string, AnchorTable>();
  if (!existsSync(readmePath)) return tables;
  let current: AnchorTable | undefined;
  for (const line of readFileSync(readmePath, "utf8").split("\n")) {
    const heading = /^\*\*([A-Za-z0-9_-]+)/.exec(line);
    if (heading) {
      current = { capacities: [], rows: new Map() };
      tables.set(heading[1]!.toLowerCase(), current);
      continue;
    }
    if (!current || !line.startsWith("|")) continue;
    const cells = line.split("|").slice(1, -1).map((cell) => cell.trim());
    if (cells[0] === "capacity") {
      current.capacities = cells.slice(1).map((cell) => Number(cell.replaceAll(",", "")));
    } else if (cells[0] !== undefined && !/^-+$/.test(cells[0]) && current.capacities.length > 0) {
      const row = new Map<number, number>();
      cells.slice(1).forEach((cell, i) => row.set(current!.capacities[i]!, Number(cell)));
      current.rows.set(cells[0], row);
    }
  }
  return tables;
}
