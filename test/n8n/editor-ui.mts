// Small helpers for driving n8n's editor in the browser tests (editor.test.mts, first-day.test.mts, readme.test.mts):
// screenshots, option pickers, the node panel (NDV) and its search, expressions, the credential modal, the output
// panel, and what a run's node output was as data (n8n's stored execution). Selectors are n8n's own data-test-id
// attributes.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { announceStarted } from '../../demo/stack.mts';
import { n8nRuntime, nodeOutput } from './harness.mts';

/** A node's last run in a stored execution: its name, its output items (json) or its error. */
export interface NodeRun {
	node: string;
	items: Record<string, unknown>[];
	error?: { message?: string; description?: string };
}

export class EditorUi {
	private shot = 0;
	/** Every push message the page received: when (ms), what, and the form it opens for a run that waits at one. */
	readonly pushes: Array<{ at: number; text: string; formUrl?: string }> = [];
	/** The page's requests to n8n's REST API (the last 200): when (ms), what, its answer; for a failure's message. */
	readonly requests: Array<{ at: number; text: string; answer?: string }> = [];

	constructor(
		readonly page: Page,
		private readonly out: string,
	) {
		// A failing test's report (test/helpers/started.mts): where the page is and what the editor said last.
		const said: string[] = [];
		const keep = (line: string) => said.push(line) > 40 && said.shift();
		page.on('console', (m) => keep(`console.${m.type()}: ${m.text().slice(0, 300)}`));
		page.on('pageerror', (e) => keep(`page error: ${e.message}`));
		const asked = new WeakMap<object, { at: number; text: string; answer?: string }>();
		page.on('request', (r) => {
			const { pathname, search } = new URL(r.url());
			if (!pathname.startsWith('/rest/') || pathname === '/rest/push') return;
			const entry = { at: Date.now(), text: `${r.method()} ${pathname}${search.slice(0, 60)}` };
			asked.set(r, entry);
			if (this.requests.push(entry) > 200) this.requests.shift();
		});
		page.on('response', (res) => {
			const entry = asked.get(res.request());
			if (entry) entry.answer = `${res.status()} after ${Date.now() - entry.at} ms`;
		});
		page.on('requestfailed', (r) => {
			const entry = asked.get(r);
			if (entry) entry.answer = `failed after ${Date.now() - entry.at} ms`;
		});
		// n8n's push messages (the editor opens a waiting form on the Wait node's nodeExecuteAfter): when, type, node.
		page.on('websocket', (ws) => {
			ws.on('framereceived', ({ payload }) => {
				if (typeof payload !== 'string' || !payload.startsWith('{')) return;
				const push = pushOf(payload);
				this.pushes.push(push);
				keep(`push at ${new Date(push.at).toISOString().slice(11, 23)}: ${push.text}`);
			});
			ws.on('close', () => keep(`push connection closed: ${ws.url()}`));
		});
		announceStarted({
			what: 'chromium page (playwright-core)',
			addresses: { screenshots: out },
			log: () => [...said, `page at ${page.url()}`].join('\n'),
		});
	}

	get ndv(): Locator {
		return this.page.locator('[data-test-id="ndv"]');
	}

	get credentialModal(): Locator {
		return this.page.locator('[data-test-id="editCredential-modal"]');
	}

	/**
	 * The credential modal's Save button itself. n8n's SaveButton puts the data-test-id on a wrapping span, which is
	 * always enabled: a click on it right after a field's fill, before n8n counts the change and enables the button
	 * inside, did nothing (no POST /rest/credentials). Playwright's click waits for this one to be enabled, as a user does.
	 */
	get credentialSave(): Locator {
		return this.credentialModal.locator('[data-test-id="credential-save-button"] button');
	}

	async screenshot(name: string): Promise<void> {
		await this.page.screenshot({ path: join(this.out, `editor-${String(++this.shot).padStart(2, '0')}-${name}.png`) });
	}

	/** Opens an options parameter and picks the option with this label. */
	async choose(param: string, label: string): Promise<void> {
		await this.page.locator(`[data-test-id="parameter-input-${param}"]`).click();
		// Options with a description have it in their accessible name: match the option's own label text.
		const option = this.page.getByRole('option').filter({ has: this.page.getByText(label, { exact: true }) });
		await option.first().click();
	}

	async fill(param: string, value: string): Promise<void> {
		await this.ndv.locator(`[data-test-id="parameter-input-${param}"] input`).fill(value);
	}

	async closePanel(): Promise<void> {
		await this.page.locator('[data-test-id="ndv-close-button"]').click();
		await this.ndv.waitFor({ state: 'hidden' });
	}

	canvasNode(text: string): Locator {
		return this.page.locator('[data-test-id="canvas-node"]').filter({ hasText: text });
	}

	/**
	 * Clicks "Execute step" in the open panel and waits until the output panel shows the run (data or an error).
	 * `done` (optional) says when this run has finished, for a panel that already shows an earlier run.
	 */
	async executeStep(done?: () => boolean): Promise<Locator> {
		// The visible panel: n8n keeps an earlier node's panel in the page, hidden.
		const output = this.page.locator('[data-test-id="output-panel"]:visible');
		await this.ndv.locator('[data-test-id="node-execute-button"]').first().click();
		const shown = output.locator(
			'[data-test-id="ndv-run-data-display-mode"]:visible, [data-test-id="node-error-message"]:visible',
		);
		await shown.first().waitFor({ timeout: 60_000 });
		const deadline = Date.now() + 60_000;
		while (done && !done()) {
			assert.ok(Date.now() < deadline, 'the step finished within 60 s');
			await this.page.waitForTimeout(200);
		}
		await output.locator('[data-test-id="ndv-executing"]').waitFor({ state: 'hidden', timeout: 60_000 });
		return output;
	}

	/** Switches the output panel to a display mode (Schema, Table, JSON) and waits until it shows it (screenshots). */
	async showOutput(output: Locator, mode: 'Schema' | 'Table' | 'JSON'): Promise<void> {
		const button = output.locator('[data-test-id="ndv-run-data-display-mode"]').getByText(mode, { exact: true });
		// Already in this mode (the panel keeps the last one): a button mid-transition need not be clicked.
		if ((await button.getAttribute('aria-checked').catch(() => null)) !== 'true') await button.click();
		await output.locator('[data-test-id="ndv-data-container"]').waitFor();
	}

	/** GET of n8n's REST API from the signed-in page, with the `browser-id` header the editor sends; its `data`. */
	// eslint-disable-next-line @typescript-eslint/no-explicit-any
	private async rest(path: string): Promise<any> {
		const r = await this.page.evaluate(async (p) => {
			const res = await fetch(p, { headers: { 'browser-id': localStorage.getItem('n8n-browserId') ?? '' } });
			return { status: res.status, text: await res.text() };
		}, path);
		assert.equal(r.status, 200, `GET ${path}: ${r.text.slice(0, 300)}`);
		return JSON.parse(r.text).data;
	}

	/** The executions n8n has stored so far: a mark before a run (its execution is the one not in it). */
	async executionIds(): Promise<Set<string>> {
		const list = (await this.rest('/rest/executions?limit=100')) as { results: Array<{ id: string }> };
		return new Set(list.results.map((e) => e.id));
	}

	/**
	 * What the run's last node (the step just executed, or the last node of a workflow run) output in the first
	 * finished execution since the mark `before`, as n8n stored it (GET /rest/executions/:id): the data itself, not
	 * what the output panel renders of it (its JSON view draws only what is in view: a read once saw only the first
	 * line). Waits (bounded) for n8n to store the finished run.
	 */
	async nodeRun(before: Set<string>, timeoutMs = 60_000): Promise<NodeRun> {
		const deadline = Date.now() + timeoutMs;
		for (;;) {
			const fresh = await this.executionsSince(before);
			const done = fresh.find((e) => !['new', 'running', 'waiting'].includes(e.status));
			if (done) {
				const data = await this.executionData(done.id);
				const node: string = data.resultData.lastNodeExecuted;
				const runs = data.resultData.runData[node];
				const error = runs[runs.length - 1].error;
				return { node, items: error ? [] : nodeOutput({ data }, node), error };
			}
			const seen = fresh.map((e) => `${e.id}:${e.status}`).join(', ') || 'none';
			assert.ok(Date.now() < deadline, `a finished execution stored within ${timeoutMs} ms (since the mark: ${seen})`);
			await this.page.waitForTimeout(250);
		}
	}

	/** The executions stored since the mark `before` (newest first): id and status. */
	async executionsSince(before: Set<string>): Promise<Array<{ id: string; status: string }>> {
		const list = (await this.rest('/rest/executions?limit=20')) as { results: Array<{ id: string; status: string }> };
		return list.results.filter((e) => !before.has(e.id));
	}

	/** A stored execution's data (runData per node, lastNodeExecuted, error), parsed. */
	// eslint-disable-next-line @typescript-eslint/no-explicit-any
	async executionData(id: string): Promise<any> {
		return flatted().parse(((await this.rest(`/rest/executions/${id}`)) as { data: string }).data);
	}

	/** What the runs since `before` did, for a failure's message: status, the nodes that ran, the last one's error. */
	async runsSince(before: Set<string>): Promise<string> {
		const out: string[] = [];
		for (const e of await this.executionsSince(before)) {
			const { resultData: r } = await this.executionData(e.id);
			const error = r.error?.message ? `, error ${r.error.message}` : '';
			out.push(`execution ${e.id} ${e.status}: ran ${Object.keys(r.runData ?? {}).join(' → ')}${error}`);
		}
		return out.join('; ') || 'no execution stored';
	}

	/**
	 * Which run each of the editor's workflow documents follows (its pinia stores: documentId → activeExecutionId):
	 * the editor handles a run's push messages (opening a waiting form among them) only on the document running it.
	 */
	async editorRuns(): Promise<string> {
		return this.page
			.evaluate(() => {
				// eslint-disable-next-line @typescript-eslint/no-explicit-any
				const pinia = (document.querySelector('#app') as any)?.__vue_app__?.config?.globalProperties?.$pinia;
				const out: string[] = [];
				for (const [id, store] of (pinia?._s ?? new Map()) as Map<string, Record<string, unknown>>)
					if (id.startsWith('workflowExecutionStates/')) out.push(`${id.slice(24)} active ${store.activeExecutionId}`);
				return out.join(', ') || 'no execution state found';
			})
			.catch((e: Error) => `not read: ${e.message}`);
	}

	/** Opens the credential of the open node panel in its modal. */
	async openCredential(): Promise<Locator> {
		await this.ndv
			.locator('[data-test-id="credential-edit-button"] svg, [data-test-id="credential-edit-button"]')
			.first()
			.click();
		await this.credentialModal.waitFor();
		return this.credentialModal;
	}

	/** Save runs n8n's credential test: success shows the banner (or closes the modal of a new credential). */
	async saveAndExpectSuccess(name: string): Promise<void> {
		const modal = this.credentialModal;
		const save = this.credentialSave;
		const before = await buttonState(save);
		const clicked = Date.now();
		await save.click();
		const ok = modal.locator('[data-test-id="credentials-config-container-test-success"]');
		// a Save n8n refused shows only a toast, outside the modal (the modal keeps its "Save" button): wait for it too
		const refused = this.page.locator('.el-notification').filter({ hasText: /Problem (creating|updating) credential/ });
		await Promise.race([
			ok.waitFor({ timeout: 60_000 }),
			modal.waitFor({ state: 'hidden', timeout: 60_000 }),
			refused.first().waitFor({ timeout: 60_000 }),
		]).catch(async (e: Error) => {
			// Whose turn it was: the editor (no POST /rest/credentials after the click) or n8n (asked, not answered).
			const asked = this.requests
				.slice(-12)
				.map((r) => `${r.text} at ${r.at - clicked} ms (${r.answer ?? 'no answer'})`);
			assert.fail(
				`the Save showed its outcome (${e.message.split('\n')[0]}); Save button before the click: ${before}, now: ${await buttonState(save)}; the page's last requests (ms from the click): ${asked.join(', ')}`,
			);
		});
		await this.screenshot(name);
		if (await refused.count()) assert.fail(`n8n refused the Save: ${await refused.first().innerText()}`);
		if (await modal.isVisible()) assert.ok(await ok.isVisible(), 'the test succeeded');
		assert.equal(await modal.getByText(/does not match|refused|Could not reach/).count(), 0);
	}

	/**
	 * Enters `text` in the node panel's search box. Not keys typed at the page: the box takes the focus when it has
	 * rendered (autofocus), and under load keys typed before that went nowhere (CI: the box stayed empty, 45 s).
	 */
	async search(text: string): Promise<void> {
		await this.page.locator('[data-test-id="node-creator-search-bar"]').fill(text);
	}

	/** The node panel's search: enters `search`, picks the node, then its action; the node's panel opens. */
	async addFromPanel(search: string, nodeLabel: string, action: string): Promise<void> {
		const creator = this.page.locator('[data-test-id="node-creator"]');
		await this.search(search);
		await creator.getByText(nodeLabel, { exact: true }).first().click();
		await creator.getByText(action, { exact: true }).first().click();
		await this.ndv.waitFor();
	}

	/** Maps a parameter with an n8n expression as a user does: `{{` in the field opens its expression editor. */
	async expression(param: string, expr: string): Promise<void> {
		const box = this.ndv.locator(`[data-test-id="parameter-input-${param}"]`);
		await box.locator('input, textarea').first().click();
		await this.page.keyboard.type('{{ ');
		const cm = box.locator('.cm-content[contenteditable="true"]').first();
		await cm.waitFor();
		// Under load the editor's own pre-fill (`{{  }}`) can land after the text is inserted; a user then selects all
		// and enters it again, and so does the test (at most 5 times).
		for (let i = 0; i < 5; i++) {
			await cm.click();
			await this.page.keyboard.press('ControlOrMeta+a');
			await this.page.keyboard.insertText(`{{ ${expr} }}`);
			await this.page.waitForTimeout(500);
			if ((await cm.innerText()).trim() === `{{ ${expr} }}`) break;
		}
		assert.equal((await cm.innerText()).trim(), `{{ ${expr} }}`, `${param} holds the expression`);
		// Leave the inline editor (its hint popup would cover the next field); the editor commits the value a moment later.
		await this.ndv.getByText('Parameters', { exact: true }).first().click();
		await this.page.waitForTimeout(1500);
	}

	/** Opens the credential slot's "create new" of the open node panel (empty state or the select's entry). */
	async newCredential(slot = ''): Promise<Locator> {
		const empty = this.ndv.locator('[data-test-id="node-credentials-empty-state"]').filter({ hasText: slot });
		if (await empty.count()) await empty.first().click();
		else {
			await this.ndv.locator('[data-test-id="node-credentials-select"]').first().click();
			await this.page
				.getByText(/Create new credential/)
				.first()
				.click();
		}
		await this.credentialModal.waitFor();
		// A new credential's modal asks n8n for its name, then sets the defaults of the fields not set yet and shows the
		// name in that tick (n8n 2.40.7: credentialName, then the defaults). A field filled before that was seen with the
		// default in front of it ("http://127.0.0.1:7243http://127.0.0.1:19130", s18 run f7): fields are filled after it.
		await this.credentialModal.locator('[data-test-id="credential-name"]').waitFor();
		return this.credentialModal;
	}

	async closeCredential(): Promise<void> {
		// The dialog's own close button (Escape would close the node panel behind it too).
		if (await this.credentialModal.isVisible()) await this.page.locator('.el-dialog__headerbtn:visible').last().click();
		await this.credentialModal.waitFor({ state: 'hidden' });
		if (await this.ndv.isVisible()) await this.credentialOnNode();
	}

	/**
	 * Waits until the open node panel shows a credential on the node. n8n puts a new credential on the node, and gives a
	 * new node the only one of its type, from the list of credentials it asks for (after a save, after the page): a run
	 * started before that list came ran without one ("Node does not have any credentials set" at load ~30; reproduced
	 * with the list held 8 s).
	 */
	async credentialOnNode(): Promise<void> {
		await this.page.waitForFunction(
			() =>
				[...document.querySelectorAll('[data-test-id="ndv"] [data-test-id="node-credentials-select"] input')].some(
					(i) => (i as HTMLInputElement).value.trim() !== '',
				),
			undefined,
			{ timeout: 60_000 },
		);
	}
}

/** A button's label and whether it is disabled, for a failure's message. */
function buttonState(button: Locator): Promise<string> {
	return button
		.evaluate((el) => {
			const b = el as HTMLButtonElement;
			return `"${b.textContent?.trim()}" disabled=${b.disabled} aria=${b.getAttribute('aria-disabled')}`;
		})
		.catch((e: Error) => `not read: ${e.message.split('\n')[0]}`);
}

/** n8n's stored execution data is serialised with flatted: the parser of the n8n runtime that wrote it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function flatted(): { parse(text: string): any } {
	return createRequire(join(n8nRuntime().dir, 'node_modules/n8n/package.json'))('flatted');
}

/** One push message: when it came, a line (type, execution, node; a waiting run's form) and that form's URL. */
function pushOf(payload: string): { at: number; text: string; formUrl?: string } {
	const at = Date.now();
	try {
		const { type, data } = JSON.parse(payload);
		const formUrl = data?.data?.executionStatus === 'waiting' ? data.data.metadata?.resumeFormUrl : undefined;
		const text = [type, data?.executionId, data?.nodeName].filter(Boolean).join(' ');
		return { at, text: formUrl ? `${text} waiting, form ${formUrl}` : text, formUrl };
	} catch {
		return { at, text: payload.slice(0, 100) };
	}
}
