/*
 * The APIs the controller answers, as one table (like the network
 * worker's served[]): each row names the function that runs a request,
 * the encoder of its response and how its successes turn into errors
 * when the records do not commit. controller.c hands the table to the
 * operation engine (op.c).
 */
#include "autoconf.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "ipc/msgtypes.h"
#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "storage/checkpoint.h"
#include "storage/logdir.h"
#include "common/placement.h"
#include "workers/controller/elect.h"
#include "workers/controller/op.h"
#include "workers/controller/raft.h"
#include "workers/partition/partition.h"


/*
 * After records failed to commit, every success in a response becomes
 * the error e: per item for the admin APIs, the one error_code of the
 * broker APIs.
 */
#define OP_FAIL_EACH(fn, arr, count)					\
static void								\
fn(struct ctl_op *op, int16_t e)					\
{									\
	int32_t i;							\
									\
	for (i = 0; i < op->resp.count; i++)				\
		if (op->resp.arr[i].error_code == 0)			\
			op->resp.arr[i].error_code = e;			\
}
OP_FAIL_EACH(fail_ct, ct.topics, ct.topics_count)
OP_FAIL_EACH(fail_dt, dt.responses, dt.responses_count)
OP_FAIL_EACH(fail_cp, cp.results, cp.results_count)
OP_FAIL_EACH(fail_ac, ac.responses, ac.responses_count)
OP_FAIL_EACH(fail_iac, iac.responses, iac.responses_count)
OP_FAIL_EACH(fail_cacl, cacl.results, cacl.results_count)
OP_FAIL_EACH(fail_dacl, dacl.filter_results, dacl.filter_results_count)
OP_FAIL_EACH(fail_ausc, ausc.results, ausc.results_count)
OP_FAIL_EACH(fail_acq, acq.entries, acq.entries_count)

static void
fail_apr(struct ctl_op *op, int16_t e)
{
	int32_t i, k;

	for (i = 0; i < op->resp.apr.responses_count; i++) {
		struct rn_AlterPartitionReassignmentsResponse_ReassignableTopicResponse
		    *t = &op->resp.apr.responses[i];

		for (k = 0; k < t->partitions_count; k++)
			if (t->partitions[k].error_code == 0)
				t->partitions[k].error_code = e;
	}
}

static void
fail_br(struct ctl_op *op, int16_t e)
{
	op->resp.br.error_code = e;
}

static void
fail_bh(struct ctl_op *op, int16_t e)
{
	op->resp.bh.error_code = e;
}

static void
fail_ard(struct ctl_op *op, int16_t e)
{
	op->resp.ard.error_code = e;
}

static void
fail_ap(struct ctl_op *op, int16_t e)
{
	op->resp.ap.error_code = e;
}

static void
fail_ub(struct ctl_op *op, int16_t e)
{
	if (op->resp.ub.error_code == 0)
		op->resp.ub.error_code = e;
}

static void
fail_el(struct ctl_op *op, int16_t e)
{
	int32_t i, k;

	for (i = 0; i < op->resp.el.replica_election_results_count; i++) {
		struct rn_ElectLeadersResponse_ReplicaElectionResult *t =
		    &op->resp.el.replica_election_results[i];

		for (k = 0; k < t->partition_result_count; k++)
			if (t->partition_result[k].error_code == 0)
				t->partition_result[k].error_code = e;
	}
}

/* The response of each API, encoded from op->resp. */
#define OP_ENCODE(fn, type, field)					\
static int								\
fn(struct ctl_op *op, struct rn_kwriter *w)				\
{									\
	return rn_##type##_encode(w, op->ver, &op->resp.field);		\
}
OP_ENCODE(enc_ct, CreateTopicsResponse, ct)
OP_ENCODE(enc_dt, DeleteTopicsResponse, dt)
OP_ENCODE(enc_cp, CreatePartitionsResponse, cp)
OP_ENCODE(enc_ac, AlterConfigsResponse, ac)
OP_ENCODE(enc_iac, IncrementalAlterConfigsResponse, iac)
OP_ENCODE(enc_ub, UnregisterBrokerResponse, ub)
OP_ENCODE(enc_br, BrokerRegistrationResponse, br)
OP_ENCODE(enc_bh, BrokerHeartbeatResponse, bh)
OP_ENCODE(enc_ap, AlterPartitionResponse, ap)
OP_ENCODE(enc_el, ElectLeadersResponse, el)
OP_ENCODE(enc_dq, DescribeQuorumResponse, dq)
OP_ENCODE(enc_apr, AlterPartitionReassignmentsResponse, apr)
OP_ENCODE(enc_lpr, ListPartitionReassignmentsResponse, lpr)
OP_ENCODE(enc_ard, AssignReplicasToDirsResponse, ard)
OP_ENCODE(enc_cacl, CreateAclsResponse, cacl)
OP_ENCODE(enc_dacl, DeleteAclsResponse, dacl)
OP_ENCODE(enc_ausc, AlterUserScramCredentialsResponse, ausc)
OP_ENCODE(enc_acq, AlterClientQuotasResponse, acq)
OP_ENCODE(enc_dcq, DescribeClientQuotasResponse, dcq)

/* What the controller answers, one row per API (op.h). */
const struct ctl_op_api ctl_op_apis[] = {
	{ RN_KAPI_CREATE_TOPICS, ctl_op_create_topics, enc_ct, fail_ct, false },
	{ RN_KAPI_DELETE_TOPICS, ctl_op_delete_topics, enc_dt, fail_dt, false },
	{ RN_KAPI_CREATE_PARTITIONS, ctl_op_create_partitions, enc_cp, fail_cp,
	    false },
	{ RN_KAPI_ALTER_CONFIGS, ctl_op_alter_configs, enc_ac, fail_ac, false },
	{ RN_KAPI_CREATE_ACLS, ctl_op_create_acls, enc_cacl, fail_cacl, false },
	{ RN_KAPI_DELETE_ACLS, ctl_op_delete_acls, enc_dacl, fail_dacl, false },
	{ RN_KAPI_ALTER_USER_SCRAM_CREDENTIALS, ctl_op_alter_scram, enc_ausc,
	    fail_ausc, false },
	{ RN_KAPI_ALTER_CLIENT_QUOTAS, ctl_op_alter_client_quotas, enc_acq,
	    fail_acq, false },
	{ RN_KAPI_DESCRIBE_CLIENT_QUOTAS, ctl_op_describe_client_quotas,
	    enc_dcq, NULL, false },
	{ RN_KAPI_INCREMENTAL_ALTER_CONFIGS, ctl_op_incremental_alter_configs,
	    enc_iac, fail_iac, false },
	{ RN_KAPI_ELECT_LEADERS, ctl_op_elect_leaders, enc_el, fail_el,
	    false },
	{ RN_KAPI_DESCRIBE_QUORUM, ctl_op_describe_quorum, enc_dq, NULL,
	    false },
	{ RN_KAPI_ALTER_PARTITION_REASSIGNMENTS, ctl_op_alter_reassignments,
	    enc_apr, fail_apr, false },
	{ RN_KAPI_LIST_PARTITION_REASSIGNMENTS, ctl_op_list_reassignments,
	    enc_lpr, NULL, false },
	{ RN_KAPI_BROKER_REGISTRATION, ctl_op_broker_registration, enc_br,
	    fail_br, true },
	{ RN_KAPI_BROKER_HEARTBEAT, ctl_op_broker_heartbeat, enc_bh, fail_bh,
	    true },
	{ RN_KAPI_ALTER_PARTITION, ctl_op_alter_partition, enc_ap, fail_ap,
	    true },
	{ RN_KAPI_UNREGISTER_BROKER, ctl_op_unregister_broker, enc_ub, fail_ub,
	    false },
	{ RN_KAPI_ASSIGN_REPLICAS_TO_DIRS, ctl_op_assign_replicas_to_dirs,
	    enc_ard, fail_ard, true },
};

const size_t ctl_op_n_apis = RN_ARRAY_SIZE(ctl_op_apis);
