/**
 * Preloaded (worker/src/process/bundle.mts PRELOADED): evaluated once in the workflow thread's shared V8 context, before the
 * SDK freezes its globals. The SDK's promise hook (worker/lib/workflow/vm-shared.js) captures, source-maps and keeps a
 * stack trace for EVERY pending promise of every cached workflow (for the `__stack_trace` query), which costs heap per
 * cached runbook and a source-map lookup per frame per promise. The limit below bounds what each capture — and each
 * error created in workflow code — records (figures: docs/worker/production.md "Memory").
 */
Error.stackTraceLimit = 0;
