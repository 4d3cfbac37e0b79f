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

test: vet build
	$(GO) test -race -count=1 -timeout 30m ./...

bench: build
	$(GO) run ./tools/bench

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzSplit -fuzztime 60s ./source/file
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 60s ./pointer
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 60s ./config

clean:
	rm -rf bin var
