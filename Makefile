GO ?= go
BIN := bin/tailfeed

.PHONY: build run test bench fuzz vet clean

build:
	$(GO) build -o $(BIN) ./cmd/tailfeed

run: build
	@mkdir -p var/demo && touch var/demo/app.log
	./$(BIN) run --config config.example.yaml

vet:
	$(GO) vet ./...

# Every package's tests, with the race detector. The e2e and source/file
# packages take longest and spend most of it waiting on daemons and timers,
# not on the CPU (about a third of one core and a tenth): each runs as two
# shards at once beside the other packages, split by test name (-run and
# -skip on the same pattern: every test in exactly one shard).
TESTFLAGS := -race -count=1 -timeout 30m
E2E_SHARD := ^TestAud(1|2|3|7|9)
SF_SHARD := ^TestRev2

test: vet build
	@rc=0; \
	$(GO) test $(TESTFLAGS) $$($(GO) list ./... | grep -v -x -e tailfeed/e2e -e tailfeed/source/file) & a=$$!; \
	$(GO) test $(TESTFLAGS) -run '$(E2E_SHARD)' ./e2e & b=$$!; \
	$(GO) test $(TESTFLAGS) -skip '$(E2E_SHARD)' ./e2e & c=$$!; \
	$(GO) test $(TESTFLAGS) -run '$(SF_SHARD)' ./source/file & d=$$!; \
	$(GO) test $(TESTFLAGS) -skip '$(SF_SHARD)' ./source/file & e=$$!; \
	for p in $$a $$b $$c $$d $$e; do wait $$p || rc=1; done; \
	if [ $$rc -ne 0 ]; then echo "make test: FAIL"; fi; exit $$rc

bench: build
	$(GO) run ./tools/bench

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzSplit -fuzztime 60s ./source/file
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 60s ./pointer
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 60s ./config

clean:
	rm -rf bin var
