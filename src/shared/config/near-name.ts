// Which known variable a name that is none of them was probably meant to be: for a refusal that names the
// fix ("did you mean ORIGIN_TOKEN?") instead of a variable silently ignored.

/** The known name within `maxDistance` typos of `name` (case aside), if exactly one is nearest. */
export function closestName(name: string, known: readonly string[], maxDistance = 3): string | undefined {
  const scored = known.map((candidate) => ({ candidate, distance: editDistance(name.toUpperCase(), candidate) })).sort((a, b) => a.distance - b.distance);
  const [best, next] = scored;
  return best !== undefined && best.distance <= maxDistance && best.distance !== next?.distance ? best.candidate : undefined;
}

/**
 * For a name among others that are not ours (a process environment, a .env file shared with other tools):
 * the known name it misspells, if it is one but for case, or, both being 8 characters or longer, within two
 * typos. Short names are left alone: HOME is two typos from HOST.
 */
export function misspeltName(name: string, known: readonly string[]): string | undefined {
  if (known.includes(name)) return undefined;
  const upper = name.toUpperCase();
  if (known.includes(upper)) return upper;
  if (name.length < 8) return undefined;
  return closestName(name, known.filter((candidate) => candidate.length >= 8), 2);
}

/** Levenshtein distance: insertions, deletions and substitutions. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}
