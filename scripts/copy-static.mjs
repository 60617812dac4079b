// Copies the non-TypeScript files n8n loads at runtime (icons, codex .node.json) next to the compiled nodes.
import { cpSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const exts = ['.svg', '.png', '.json'];
let copied = 0;
function walk(dir) {
	for (const name of readdirSync(dir)) {
		const p = join(dir, name);
		if (statSync(p).isDirectory()) walk(p);
		else if (exts.some((e) => name.endsWith(e))) {
			const to = join(root, 'dist', relative(root, p));
			mkdirSync(dirname(to), { recursive: true });
			cpSync(p, to);
			copied++;
		}
	}
}
for (const d of ['nodes', 'credentials']) walk(join(root, d));
console.error(`copy-static: ${copied} files`);
