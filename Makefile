# rtviewer — build, run and test. Knobs (override on the command line):
#   CUDA_ARCH=sm_90   GPU architecture (PTX for it is embedded too, so newer GPUs JIT it)
#   NVCC=...          nvcc to use; empty or missing = CPU backend only
#   DEBUG=1           -O0 -g, and CUDA_CHECK_LAUNCH synchronises after every launch
#   WERROR=1          warnings are errors (default in CI, i.e. when CI is set)
#   SAN=1             build with AddressSanitizer + UBSan
CC        ?= cc
CUDA_ARCH ?= sm_90
DEBUG     ?= 0
SAN       ?= 0
WERROR    ?= $(if $(CI),1,0)
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard $(CUDA_HOME)/bin/nvcc))
BUILD     ?= build
comma     := ,

# Debian packages the project needs (make deps installs the missing ones).
DEB_BUILD := build-essential pkg-config libglfw3-dev libglew-dev libstb-dev libcmocka-dev
DEB_TEST  := clang libclang-rt-dev xvfb xdotool

OPT      := $(if $(filter 1,$(DEBUG)),-O0 -g,-O2 -g)
SANFLAGS := $(if $(filter 1,$(SAN)),-fsanitize=address,undefined -fno-omit-frame-pointer,)
WARN     := -Wall -Wextra -Wshadow -Wno-missing-field-initializers $(if $(filter 1,$(WERROR)),-Werror,)
CPPFLAGS += -Isrc -Icuda -I/usr/include/stb -DRT_DEBUG=$(DEBUG)
CFLAGS   += -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(SANFLAGS) -pthread
LDLIBS   += -lm -pthread

# ---- sources: the pipeline, stage by stage ------------------------------
LIB_SRC  := $(filter-out src/main.c,$(wildcard src/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CU_SRC   := $(wildcard cuda/*.cu)

ifneq ($(NVCC),)
  CUDA_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/targets/x86_64-linux/lib))
  NVFLAGS  := -std=c++17 $(OPT) -Isrc -Icuda -DRT_DEBUG=$(DEBUG) -lineinfo \
              -gencode arch=compute_$(CUDA_ARCH:sm_%=%),code=$(CUDA_ARCH) \
              -gencode arch=compute_$(CUDA_ARCH:sm_%=%),code=compute_$(CUDA_ARCH:sm_%=%) \
              -Xcompiler -Wall,-Wextra$(if $(filter 1,$(WERROR)),$(comma)-Werror,) -Werror all-warnings
  GPU_OBJ  := $(CU_SRC:%.cu=$(BUILD)/%.o)
  CPPFLAGS += -DRT_HAVE_CUDA=1
  # Static cudart: the binary runs wherever a driver is, and still starts
  # (then falls back to the CPU) where none is.
  GPU_LIBS := -L$(CUDA_LIBDIR) -lcudart_static -ldl -lrt -lstdc++
else
  GPU_OBJ  := $(BUILD)/cuda/gpu_none.o
  CPPFLAGS += -DRT_HAVE_CUDA=0
  GPU_LIBS :=
endif
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all run test deps deps-test clean fuzz check-cuda
all: check-cuda rtviewer

check-cuda:
	@$(if $(NVCC),echo "build: CUDA kernels with $(NVCC) for $(CUDA_ARCH) (+PTX)",echo "build: no CUDA toolkit found (NVCC empty): building the CPU backend only")

rtviewer: $(BUILD)/src/main.o $(BUILD)/librt.a $(GPU_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(GPU_LIBS) $(LDLIBS)

$(BUILD)/librt.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/cuda/%.o: cuda/%.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/tests/%: tests/%.c tests/test_util.h $(BUILD)/librt.a $(GPU_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CFLAGS) -o $@ $< $(BUILD)/librt.a $(GPU_OBJ) $(GPU_LIBS) -lcmocka $(LDLIBS)

# ---- set-up ---------------------------------------------------------------
# Installs the missing Debian packages: as root directly, else via sudo, else
# prints the exact command and stops.
deps:
	@sh tests/deps.sh $(DEB_BUILD)
deps-test:
	@sh tests/deps.sh $(DEB_BUILD) $(DEB_TEST)

run: deps
	@$(MAKE) --no-print-directory all
	./rtviewer $(ARGS)

test: deps-test
	@$(MAKE) --no-print-directory all $(TEST_BIN) fuzz
	@sh tests/run.sh $(TEST_BIN)

# libFuzzer target over all loaders (tests/fuzz/README.md). Built with clang.
FUZZ_BIN := $(BUILD)/fuzz_loaders
fuzz: $(FUZZ_BIN)
$(FUZZ_BIN): tests/fuzz/fuzz_loaders.c $(LIB_SRC) $(wildcard src/*.h)
	@mkdir -p $(dir $@)
	clang -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=fuzzer,address,undefined -Isrc -I/usr/include/stb \
	  -DRT_HAVE_CUDA=0 -DRT_DEBUG=0 -o $@ tests/fuzz/fuzz_loaders.c $(LIB_SRC) cuda/gpu_none.c -lm -pthread

clean:
	rm -rf $(BUILD) rtviewer

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
