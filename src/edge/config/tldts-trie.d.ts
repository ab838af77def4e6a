// The Public Suffix List trie inside tldts (pinned to an exact version in package.json: this is not its
// public API). Nodes are rules; a node's edges are edgeStart[node] … edgeStart[node + 1] - 1, each labelled
// by edgeLength[edge] characters of labelText, laid out in edge order, and leading to node edgeChild[edge].
declare module "tldts/dist/es6/src/data/trie.js" {
  export const edgeStart: Uint16Array;
  export const edgeLength: Uint8Array;
  export const edgeChild: Uint16Array;
  export const labelText: string;
  export const rulesRoot: number;
}
