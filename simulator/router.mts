/**
 * Route matching, compiled once from the catalog's `id`, `method` and `path` only (nothing else of the
 * catalog is used by the simulator). A segment trie: static children first, then one `{param}` child.
 */
import { catalog } from '../api/catalog/index.ts';

interface Node {
	statics: Map<string, Node>;
	param?: { name: string; node: Node };
	ops?: Map<string, string>; // method -> op id
}

export interface Match {
	opId: string;
	params: Record<string, string>;
}

const newNode = (): Node => ({ statics: new Map() });

export interface RouteDef {
	id: string;
	method: string;
	path: string;
}

export class Router {
	private root = newNode();
	readonly routes: RouteDef[];
	constructor(routes: readonly RouteDef[]) {
		this.routes = routes.map((r) => ({ id: r.id, method: r.method, path: r.path }));
		for (const r of this.routes) {
			let n = this.root;
			for (const seg of r.path.split('/').slice(1)) {
				if (seg.startsWith('{') && seg.endsWith('}')) {
					const name = seg.slice(1, -1);
					if (!n.param) n.param = { name, node: newNode() };
					else if (n.param.name !== name) throw new Error(`router: conflicting params ${n.param.name}/${name}`);
					n = n.param.node;
				} else {
					let c = n.statics.get(seg);
					if (!c) n.statics.set(seg, (c = newNode()));
					n = c;
				}
			}
			(n.ops ??= new Map()).set(r.method, r.id);
		}
	}

	/** undefined: no such path; { methods }: path exists, method does not; Match otherwise. */
	match(method: string, path: string): Match | { methods: string[] } | undefined {
		const segs = path.split('/');
		const names: string[] = [];
		const values: string[] = [];
		const n = this.walk(this.root, segs, 1, names, values);
		if (!n?.ops) return undefined;
		const opId = n.ops.get(method);
		if (!opId) return { methods: [...n.ops.keys()] };
		const params: Record<string, string> = {};
		for (let i = 0; i < names.length; i++) params[names[i]] = values[i];
		return { opId, params };
	}

	private walk(n: Node, segs: string[], i: number, names: string[], values: string[]): Node | undefined {
		if (i === segs.length) return n.ops ? n : undefined;
		const seg = segs[i];
		const s = n.statics.get(seg);
		if (s) {
			const r = this.walk(s, segs, i + 1, names, values);
			if (r) return r;
		}
		if (n.param && seg !== '') {
			names.push(n.param.name);
			let v = seg;
			if (v.indexOf('%') >= 0) {
				try {
					v = decodeURIComponent(v);
				} catch {
					/* keep raw */
				}
			}
			values.push(v);
			const r = this.walk(n.param.node, segs, i + 1, names, values);
			if (r) return r;
			names.pop();
			values.pop();
		}
		return undefined;
	}
}

/** The vendor API routes: id, method and path of every catalog operation. */
export function catalogRouter(): Router {
	return new Router(catalog.map((op) => ({ id: op.id, method: op.method, path: op.path })));
}
