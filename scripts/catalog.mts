// Prints one JSON object per line per operation: {id, method, path, section, encoding, auth, safety, fields}.
import { catalog } from '../api/catalog/index.ts';

for (const op of catalog) {
	process.stdout.write(
		JSON.stringify({
			id: op.id,
			method: op.method,
			path: op.path,
			section: op.section,
			encoding: op.encoding,
			auth: op.auth,
			safety: op.safety,
			fields: op.fields.map((f) => ({ name: f.name, in: f.in, required: f.required })),
		}) + '\n',
	);
}
