/**
 * Where the nodes' "Docs" links point: the package's README on npm, at a section. Set as the node description's
 * `documentationUrl` because n8n's editor opens an absolute one as it is, while a codex URL gets `?utm_…` appended
 * to its end — after the `#`, which breaks the section anchor.
 */
export const README_URL = 'https://www.npmjs.com/package/n8n-nodes-security-service';
export const docsUrl = (section: string) => `${README_URL}#${section}`;
