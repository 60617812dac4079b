import type { ICredentialDataDecryptedObject } from 'n8n-workflow';
import type { OwnAddress } from '../../../api/ownAddresses';
import type { TokenRefusal } from '../../../api/tokenRefusal';
import type { HttpRequest, HttpResponse } from '../../../api/transport/types';
import { askClusterToken, type ClusterGrant } from './clusterToken';
import type { SecurityServiceContext, TransportStats } from './index';
import type { Bounded, CredentialHolder } from './renewing';
import { sendBounded } from './request';

/**
 * Token Source "From the cluster's token owner": the tenant workflow's token (clusterToken.ts), held in this
 * execution's memory only, asked again once its renewAt passed or the service refused it; asks are single-flight
 * (items may run concurrently) and never renew anything here.
 */
export function clusterTokenSender(
	ctx: SecurityServiceContext,
	holder: CredentialHolder,
	refusal: (req: HttpRequest, res: HttpResponse) => TokenRefusal | undefined,
	stats?: TransportStats,
) {
	let grant: ClusterGrant | undefined;
	let asking: Promise<ClusterGrant> | undefined;
	function clusterGrant(
		cred: ICredentialDataDecryptedObject,
		deadline: number,
		rejected?: number,
	): Promise<ClusterGrant> {
		const held = grant;
		if (held && (rejected === undefined ? Date.now() < held.renewAt : held.generation > rejected))
			return Promise.resolve(held);
		asking ??= askClusterToken(ctx, cred, deadline, rejected)
			.then((g) => (grant = g))
			.finally(() => (asking = undefined));
		return asking;
	}
	const sendWith = (req: Bounded, url: string, token: string) =>
		sendBounded((o) => ctx.helpers.httpRequest({ ...o, qs: { access_token: token } }), req.left(), url);
	async function sendCluster(req: Bounded, url: string, cred: ICredentialDataDecryptedObject): Promise<HttpResponse> {
		if (stats && grant && Date.now() >= grant.renewAt) stats.expiredRenewals++;
		const g = await clusterGrant(cred, req.deadline);
		const first = await sendWith(req, url, g.accessToken);
		const why = refusal(req, first);
		if (!why) return first;
		// Refused token: the workflow renews unless it already holds a newer generation; one resend.
		if (stats) stats.refusedRenewals[why]++;
		return await sendWith(req, url, (await clusterGrant(cred, req.deadline, g.generation)).accessToken);
	}

	// With a cluster token: the customer's own networks declared at tenant install come with its token grant (asked
	// within the node's default bound when no grant is held yet).
	const declaredRanges = async (): Promise<OwnAddress[]> => {
		const cred = await holder.get();
		if (cred.source !== 'cluster') return [];
		const source = `tenant ${String(cred.customerId)} --protected`;
		return (await clusterGrant(cred, Date.now() + 30_000)).protectedRanges.map((range) => ({ range, source }));
	};
	return { sendCluster, declaredRanges };
}
