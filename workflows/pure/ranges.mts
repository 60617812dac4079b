/**
 * The runbooks' IPv4 range arithmetic: it lives in api/ranges.ts (pure, shipped in the n8n package too, which may
 * not import workflows/); re-exported here under the names the workflows use.
 */
export * from '../../api/ranges.ts';
export { entryRangeKey, listedByKey } from '../../api/catalog/ipv4.ts';
