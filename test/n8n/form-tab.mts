// The tab n8n's editor opens for a manual run waiting at a form (n8n 2.40.7: usePushConnection's nodeExecuteAfter
// handler calls window.open with the Wait node's resumeFormUrl). Every window.open of the page is recorded (its URL,
// when, the window it returned), so that a test tells "the editor opened no tab" from "the tab did not load", and can
// load the tab again as its user would (first-day.test.mts says when and why).
import type { BrowserContext, Page } from 'playwright-core';

interface Opened {
	url: string;
	at: number;
	tab: Window | null;
}
type Recorded = Window & { __secsvcWindowOpens?: Opened[] };

/** Records the window.open calls of every document of the context from its start (an init script). */
export async function recordWindowOpens(context: BrowserContext): Promise<void> {
	await context.addInitScript(() => {
		const w = window as Recorded;
		const opens: Opened[] = (w.__secsvcWindowOpens = []);
		const open = window.open.bind(window);
		window.open = (...args: Parameters<typeof window.open>) => {
			const tab = open(...args);
			opens.push({ url: String(args[0]), at: Date.now(), tab });
			return tab;
		};
	});
}

/** The page's window.open calls so far: URL, when (ms) and whether a window came back. */
export async function windowOpens(page: Page): Promise<Array<{ url: string; at: number; tab: boolean }>> {
	return page.evaluate(() =>
		((window as Recorded).__secsvcWindowOpens ?? []).map((o) => ({ url: o.url, at: o.at, tab: o.tab !== null })),
	);
}

/**
 * Loads `url` again in the tab the page opened for it if that tab has shown nothing yet (still about:blank: its first
 * request unanswered), as its user reloads a blank tab; true if it did. A tab that shows a page (its own, or n8n's
 * sandboxed form page: an opaque origin, unreadable from here) is left as it is.
 */
export async function loadAgainIfBlank(page: Page, url: string): Promise<boolean> {
	return page.evaluate((u) => {
		const opened = ((window as Recorded).__secsvcWindowOpens ?? []).filter((o) => o.url === u && o.tab);
		const tab = opened[opened.length - 1]?.tab;
		if (!tab) throw new Error(`no tab opened for ${u}`);
		try {
			if (tab.location.href !== 'about:blank') return false;
		} catch {
			return false; // n8n's form page is sandboxed (CSP): an opaque origin, so a page is there
		}
		tab.stop(); // its unanswered load: without this, chromium does not ask again for the URL it is loading
		tab.location.href = u;
		return true;
	}, url);
}
