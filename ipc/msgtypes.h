/*
 * Messages carried on the shared-memory rings. The frame header carries
 * the type and the sender's pid; the payload is a msgpack map. Bump
 * RN_IPC_VERSION on every change to a type or its payload: a worker that
 * sees a hello with another version refuses it.
 */
#ifndef RN_MSGTYPES_H
#define RN_MSGTYPES_H

#define RN_IPC_VERSION 6

enum rn_ipc_type {
	RN_IPC_PAD = 0,     /* reserved by the ring for wrap-around padding */
	/*
	 * worker -> controller, once per start: {"v": RN_IPC_VERSION,
	 * "role": str, "index": int, "pid": int}. Lets the controller see
	 * each (re)started worker and check it speaks the same version.
	 */
	RN_IPC_HELLO = 1,
	/* controller -> worker, answer to HELLO: {"v": int, "image": int} */
	RN_IPC_HELLO_ACK = 2,
	/*
	 * network worker -> controller: a Kafka admin request the controller
	 * answers (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
	 * IncrementalAlterConfigs, ...), forwarded as it came from the client:
	 * {"v": int, "req": uint (worker's id for the request), "key": int
	 *  (API key), "ver": int (API version), "client": str (client id),
	 *  "body": bin (request body, after the request header)}.
	 */
	RN_IPC_ADMIN_REQUEST = 3,
	/*
	 * controller -> network worker: {"v": int, "req": uint, "err": int
	 * (0, or a Kafka error code when the request could not be handled
	 * at all), "body": bin (response body, without the response header)}.
	 */
	RN_IPC_ADMIN_RESPONSE = 4,
	/*
	 * network worker -> controller: create these topics with the broker
	 * defaults if they do not exist (auto.create.topics.enable), no reply:
	 * {"v": int, "topics": [str, ...]}. An entry may instead be a map
	 * {"name": str, "partitions": int, "rf": int, "configs": {str: str}}:
	 * an internal topic (__consumer_offsets), created with those settings
	 * whatever auto.create.topics.enable says.
	 */
	RN_IPC_AUTO_CREATE = 5,
	/*
	 * network worker (partition leader) -> controller worker: ask the
	 * active controller to change an ISR (Kafka's AlterPartition):
	 * {"v": int, "topic_id": bin 16, "p": int, "leader_epoch": int,
	 *  "partition_epoch": int, "isr": [int, ...]}. No reply: the new
	 * metadata image shows whether it was applied.
	 */
	RN_IPC_ALTER_PARTITION = 6,
	/*
	 * Either way: one piece of a message larger than a ring frame
	 * (ipc/ringq.h), raw bytes {u32 total, u32 offset, u16 type, u16 0}
	 * then the piece; reassembled, it is a message of that type.
	 */
	RN_IPC_FRAGMENT = 7,
	/*
	 * network worker -> group coordinator: a group API request (JoinGroup,
	 * SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
	 * ListGroups, DescribeGroups, DeleteGroups, OffsetDelete) as the
	 * client sent it: {"v": int, "req": uint, "key": int, "ver": int,
	 * "client": str, "host": str (client address, Kafka's "/a.b.c.d"),
	 * "principal": str and "addr": str (who asks, from where: the
	 * coordinator authorizes with them), "body": bin}.
	 */
	RN_IPC_GROUP_REQUEST = 8,
	/*
	 * Also on this ring, a partition leader's check of a transactional
	 * write (KIP-890): {"v": int, "req": uint, "key": 24, "verify": str
	 * (transactional id), "pid": int, "epoch": int, "parts": [topic str,
	 * partition int, ...]}; answered by a GROUP_RESPONSE {"v", "req",
	 * "verify": [error code a partition, in order]}.
	 */
	/*
	 * group coordinator -> network worker, possibly much later (a join
	 * waits for the rebalance, a commit for the ISR): {"v": int,
	 * "req": uint, "body": bin (response body)}.
	 */
	RN_IPC_GROUP_RESPONSE = 9,
};

#endif /* RN_MSGTYPES_H */
