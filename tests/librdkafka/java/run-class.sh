#!/bin/sh
# librdkafka's test runner starts its Java helpers as
# "java/run-class.sh CLASS ARGS..." from its working directory (test.c,
# test_run_java). runnel runs it from a directory whose java/ is this
# one: TransactionProducerCli (test 0098) is answered by a Python
# stand-in with the same command line, since Kafka's Java client is not
# in Debian; any other class is refused.
here=$(dirname "$(readlink -f "$0")")
cls=$1
shift
case $cls in
TransactionProducerCli)
	exec /usr/bin/python3 "$here/../transaction_producer_cli.py" "$@" ;;
*)
	echo "$0: runnel has no stand-in for the Java helper $cls" >&2
	exit 1 ;;
esac
