#!/usr/bin/env bash
# 4 KiB durable PUT/s with --durable-ack index against log (the default), in alternating rounds
# (bench/node/put-ab.sh). Run after `make build`: bash bench/node/durable-ack-ab.sh [rounds]
exec bash "$(dirname "$0")/put-ab.sh" durable-ack index log "${1:-3}"
