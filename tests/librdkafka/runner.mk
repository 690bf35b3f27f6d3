# The Makefile in the directory runnel runs librdkafka's test-runner from.
# The runner builds its Java helpers with "make -s java" before starting
# one; runnel's stand-in (java/run-class.sh) needs no build.
java:
	@:
.PHONY: java
