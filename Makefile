# toolgate — see README.md. Every target installs what it needs.
GO      ?= go
NPM     ?= npm
OUT     ?= out
# Go packages that make test covers (the CDK app, when it exists, is its own package).
PKGS    ?= ./...

.PHONY: all build deps test lint bench run fuzz size clean synth deploy docs-screenshot

all: build

FUNCTIONS := $(patsubst functions/%/main.go,%,$(wildcard functions/*/main.go))

# The commit toolgate version prints, stamped into bin/toolgate: the short
# commit, -dirty when tracked files have uncommitted changes (else unknown).
# The version it prints is CHANGELOG.md's (docs/design.md, "Versions").
TOOLGATE_COMMIT  ?= $(shell if c=$$(git rev-parse --short HEAD 2>/dev/null); then git diff --quiet HEAD -- 2>/dev/null || c=$$c-dirty; echo $$c; else echo unknown; fi)

# The CLI for this machine, and every function's bootstrap for Lambda's
# provided.al2023 runtime on arm64 (bin/functions/<name>/bootstrap).
build:
	$(GO) build -ldflags '-X github.com/toolgate/toolgate/resolver/cli.commit=$(TOOLGATE_COMMIT)' -o bin/toolgate ./resolver/cmd/toolgate
	@for f in $(FUNCTIONS); do \
	  echo "bootstrap $$f (linux/arm64)"; \
	  GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' -o bin/functions/$$f/bootstrap ./functions/$$f || exit 1; \
	done

# Go modules, the pinned npm tools (package-lock.json), the Powertools
# anchor make bench compares the dispatcher with (testdata/powertools, its
# own lockfile) and the Lambda Runtime Interface Emulator
# (bin/aws-lambda-rie) that infra/local runs Lambdas under.
deps: node_modules/.package-lock.json testdata/powertools/node_modules/.package-lock.json bin/aws-lambda-rie
	$(GO) mod download

node_modules/.package-lock.json: package.json package-lock.json
	$(NPM) ci --no-audit --no-fund --loglevel=error

testdata/powertools/node_modules/.package-lock.json: testdata/powertools/package.json testdata/powertools/package-lock.json
	$(NPM) ci --prefix testdata/powertools --no-audit --no-fund --loglevel=error

# Pinned pseudo-version of the Lambda Runtime Interface Emulator; skipped when already present.
bin/aws-lambda-rie:
	GOBIN=$(CURDIR)/bin $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

test: deps lint
	$(GO) test -count=1 -timeout 30m $(PKGS)

# Every benchmark; the resolver's print their ratios to the baseline
# measured in the same run (x-parse, x-parse-cpu and x-parse-B: compile
# against parse; x-start: toolgate check against the CLI's start), which
# docs/performance.md, "The resolver", sets goals in.
# BenchmarkDispatch also runs the Powertools anchor on its
# dynalite, through its counting front, and prints the dispatcher's request
# bytes, client CPU and requests as ratios to Powertools' from that one run
# (x-powertools-*, goal-*-met; docs/performance.md).
bench: deps
	TOOLGATE_POWERTOOLS_BENCH=$(CURDIR)/testdata/powertools/bench.mjs $(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Short fuzzing of every fuzz target, FUZZTIME each (their seeds also run
# in make test). FUZZ_TARGETS lists package:target; a new target is added here.
FUZZTIME ?= 15s
FUZZ_TARGETS := \
	./resolver/:FuzzParse ./resolver/:FuzzWithToolset ./functions/publish/publish/:FuzzLiteralsBothSides ./functions/publish/publish/:FuzzParseCredentialAdmins \
	./resolver/flowchart/:FuzzMermaidText ./resolver/flowchart/:FuzzDOTText \
	./resolver/declare/:FuzzTypeScript \
	./resolver/:FuzzBindingPatternECMA ./resolver/declare/:FuzzSolutionSchema \
	./shared/tool/:FuzzDecodeEnvelope ./shared/tool/:FuzzKeep ./shared/tool/:FuzzPatterns ./shared/tool/:FuzzTraceContext ./shared/tracecontext/:FuzzParse \
	./shared/toolset/:FuzzToolsetParse ./shared/toolset/:FuzzPatterns ./shared/toolset/:FuzzCanonicalHTTPHost ./shared/toolset/:FuzzParseMCPURLAuth ./shared/catalog/:FuzzNamePattern \
	./shared/dnsname/:FuzzParse \
	./shared/schemashape/:FuzzShape \
	./shared/hostlist/:FuzzParseEntry ./shared/hostlist/:FuzzMatch \
	./shared/review/:FuzzDecodeTask ./shared/review/:FuzzDecodeStart ./shared/review/:FuzzDecodeChildStart ./shared/review/:FuzzDecodeChildCheck ./shared/review/:FuzzARNPatterns ./shared/review/:FuzzParseForkWaiting ./shared/review/:FuzzDecodeStartRequest ./shared/review/:FuzzCheckEdits ./shared/enduser/:FuzzParseMapping ./shared/reviewer/:FuzzMatch ./shared/reviewer/:FuzzCheckPattern \
	./shared/caller/:FuzzVerifyProof ./shared/ledger/:FuzzCompactItem \
	./shared/recipient/:FuzzDecide ./shared/recipient/:FuzzParseList ./shared/recipient/:FuzzParseCommaList ./shared/recipient/:FuzzIAMPatterns \
	./shared/fetchurl/:FuzzParse \
	./shared/fetch/:FuzzDecide ./shared/fetch/:FuzzSelect ./shared/fetch/:FuzzUTF8Check ./shared/fetch/:FuzzRetryAfter \
	./shared/httptool/:FuzzKeyHeaderValue ./shared/httptool/:FuzzEncodeBody \
	./shared/mcptool/:FuzzDiff ./shared/mcptool/:FuzzClassify ./shared/mcptool/:FuzzRawNextCursor ./shared/inputrecord/:FuzzRead ./shared/inputrecord/:FuzzHasStarter ./shared/solutioncomment/:FuzzRead \
	./shared/schema/:FuzzPattern ./shared/invisible/:FuzzEscape ./shared/externalkey/:FuzzParse ./shared/excerpt/:FuzzCuts \
	./resolver/changelog/:FuzzParse ./infra/local/otlpreceiver/:FuzzDecode ./shared/credential/:FuzzCheckSecret ./shared/credential/:FuzzInvalidToken \
	./shared/credential/:FuzzParseScope ./shared/schedule/:FuzzParse \
	./shared/webhook/:FuzzParsePatterns ./shared/webhook/:FuzzParseSchedule ./shared/webhook/:FuzzParseSecret ./shared/webhook/:FuzzEndpointRulesCheck ./shared/webhook/:FuzzParseOwnHost \
	./shared/webhook/:FuzzRunOf \
	./shared/inbound/:FuzzParseStandardSignature ./shared/inbound/:FuzzParseStripeSignature ./shared/inbound/:FuzzParseGitHubSignature ./shared/inbound/:FuzzVerify \
	./shared/webhookapi/:FuzzStatusChange ./shared/inboundapi/:FuzzDecodeMessage \
	./shared/observed/:FuzzShapeItem ./shared/observed/:FuzzShapesFile ./shared/observed/:FuzzPatterns \
	./resolver/cli/console/:FuzzRewriteEmailHTML
# Each function's deployed bootstrap size and cold-start init under the
# RIE, next to a trivial handler built the same way, as ratios from one run:
# fifteen rounds, one cold start of each function per round (docs/performance.md).
size: deps
	$(GO) run ./infra/local/size

fuzz:
	@for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz $$name ($$pkg)"; \
	  $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 3s $$pkg || exit 1; \
	done
	@n=$$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v node_modules | xargs grep -h '^func Fuzz' | wc -l); \
	  if [ "$$n" -ne $(words $(FUZZ_TARGETS)) ]; then echo "make fuzz: $$n fuzz targets in the tree, $(words $(FUZZ_TARGETS)) in FUZZ_TARGETS"; exit 1; fi

# The main job: compile every Solution in testdata/solutions/ (one line
# each; a Solution with a golden .err file must be refused), then the whole
# governed flow on the local stack (infra/local/demo).
run: deps build
	@mkdir -p $(OUT)/solutions
	@echo "== compiling every Solution in testdata/solutions: those with a golden .err (refuse-*) are refused on purpose, each showing a rule; the others compile into $(OUT)/solutions"
	@fail=0; for f in testdata/solutions/*.yaml testdata/solutions/*.json; do \
	  case "$$f" in *.asl.json|*.toolset.json) continue;; esac; \
	  if [ -f "$${f%.*}.err" ]; then \
	    if bin/toolgate check --summary "$$f"; then echo "unexpected: $$f compiled, but it has a golden .err"; fail=1; fi; \
	  else \
	    bin/toolgate compile "$$f" -o $(OUT)/solutions || fail=1; \
	  fi; \
	done; exit $$fail
	$(GO) run ./infra/local/demo

# docs/images/review-console.png, which docs/reviews.md shows: the review
# console in headless Chromium (apt-get install -y chromium-headless-shell)
# showing the reviews demo's pending e-mail review on the local stack
# (infra/local/console, TestDocsScreenshotOfTheDemoReview). Not part of test.
docs-screenshot: deps
	@mkdir -p docs/images
	TOOLGATE_REQUIRE_BROWSER=1 TOOLGATE_DOCS_SCREENSHOT=$(CURDIR)/docs/images/review-console.png \
	  $(GO) test -count=1 -v -timeout 10m -run '^TestDocsScreenshotOfTheDemoReview$$' ./infra/local/console

# The CDK app (infra/, docs/infra.md): the CLI and jsii keep their caches
# inside the repository, send no telemetry, and Node 20's end-of-life banner
# is silenced. Synth needs no network; CDK_FLAGS passes more, such as
# CDK_FLAGS='-c toolgate:stage=prod -c toolgate:sender=toolgate@example.org'.
CDK       ?= npx --no-install cdk
CDK_FLAGS ?=
CDK_ENV   := CDK_DISABLE_CLI_TELEMETRY=true CDK_HOME=$(CURDIR)/.cache/cdk \
	JSII_RUNTIME_PACKAGE_CACHE_ROOT=$(CURDIR)/.cache/jsii JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20

# cdk.out/<Stack>.template.json from every function's bootstrap (make build).
synth: build deps
	$(CDK_ENV) $(CDK) synth --no-notices --quiet $(CDK_FLAGS)
	@ls cdk.out/*.template.json

# Deploys both stacks, the ledger first (needs AWS credentials).
deploy: build deps
	$(CDK_ENV) $(CDK) deploy --no-notices --all $(CDK_FLAGS)

clean:
	rm -rf bin $(OUT)
