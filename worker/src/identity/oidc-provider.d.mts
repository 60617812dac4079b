// oidc-provider ships no types; @types/oidc-provider would pull koa's and express's. worker/src/identity/localProvider.mts
// types the few calls it makes.
declare module 'oidc-provider' {
	const Provider: unknown;
	export default Provider;
}
