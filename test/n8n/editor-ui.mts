// Small helpers for driving n8n's editor in the browser test (editor.test.mts): screenshots, option pickers, the
// node panel (NDV), the credential modal and the output panel. Selectors are n8n's own data-test-id attributes.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';

export class EditorUi {
	private shot = 0;

	constructor(
		readonly page: Page,
		private readonly out: string,
	) {}

	get ndv(): Locator {
		return this.page.locator('[data-test-id="ndv"]');
	}

	get credentialModal(): Locator {
		return this.page.locator('[data-test-id="editCredential-modal"]');
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

	/** Switches the output panel to a display mode (Schema, Table, JSON) and returns its text with spaces folded. */
	async outputText(output: Locator, mode: 'Schema' | 'Table' | 'JSON'): Promise<string> {
		const button = output.locator('[data-test-id="ndv-run-data-display-mode"]').getByText(mode, { exact: true });
		// Already in this mode (the panel keeps the last one): a button mid-transition need not be clicked.
		if ((await button.getAttribute('aria-checked').catch(() => null)) !== 'true') await button.click();
		const container = output.locator('[data-test-id="ndv-data-container"]');
		await container.waitFor();
		// The view switch re-renders the container: its text arrives a moment after the container (an empty read was
		// seen in CI), so wait (bounded) until it has some.
		const deadline = Date.now() + 10_000;
		for (;;) {
			const text = (await container.innerText()).replace(/\s+/g, ' ').trim();
			if (text || Date.now() > deadline) return text;
			await this.page.waitForTimeout(100);
		}
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
		await modal.locator('[data-test-id="credential-save-button"]').click();
		const ok = modal.locator('[data-test-id="credentials-config-container-test-success"]');
		await Promise.race([ok.waitFor({ timeout: 60_000 }), modal.waitFor({ state: 'hidden', timeout: 60_000 })]);
		await this.screenshot(name);
		if (await modal.isVisible()) assert.ok(await ok.isVisible(), 'the test succeeded');
		assert.equal(await modal.getByText(/does not match|refused|Could not reach/).count(), 0);
	}

	async closeCredential(): Promise<void> {
		// The dialog's own close button (Escape would close the node panel behind it too).
		if (await this.credentialModal.isVisible()) await this.page.locator('.el-dialog__headerbtn:visible').last().click();
		await this.credentialModal.waitFor({ state: 'hidden' });
	}
}
