// Structure figures per folder: files, lines, files over 300 lines, functions over 80 lines, `any` types and no-explicit-any disables.
// Usage: node scripts/structure-figures.mjs [repo-root]  (issue 23's before/after figures; measures only, changes nothing)
import ts from 'typescript';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
const root = process.argv[2] ?? '.';
const folders = ['workflows', 'nodes/SecurityServiceRunbook', 'api', 'worker/src'];
const walk = (d) => readdirSync(d).flatMap((f) => { const p = join(d, f); return statSync(p).isDirectory() ? walk(p) : /\.m?ts$/.test(f) ? [p] : []; });
for (const folder of folders) {
  const files = walk(join(root, folder));
  let lines = 0, big = [], longFns = [], anys = 0, disables = 0;
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    const n = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    lines += n; if (n > 300) big.push(`${relative(root, f)}:${n}`);
    disables += (text.match(/no-explicit-any/g) ?? []).length;
    const sf = ts.createSourceFile(f, text, ts.ScriptTarget.Latest, true);
    const visit = (node) => {
      if (node.kind === ts.SyntaxKind.AnyKeyword) anys++;
      if (ts.isFunctionLike(node) && node.body) {
        const a = sf.getLineAndCharacterOfPosition(node.getStart()).line, b = sf.getLineAndCharacterOfPosition(node.end).line;
        if (b - a + 1 > 80) longFns.push(`${relative(root, f)}:${a + 1}(${b - a + 1})`);
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  console.log(`${folder}: files=${files.length} lines=${lines} over300=${big.length} ${big.join(' ')} | fns>80=${longFns.length} ${longFns.join(' ')} | any=${anys} no-explicit-any=${disables}`);
}
