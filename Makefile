# rtviewer — build, run and test. Knobs (override on the command line):
#   CUDA_ARCH=sm_90   GPU architecture (PTX for it is embedded too, so newer GPUs JIT it)
#   NVCC=...          nvcc to use; empty or missing = CPU backend only
#   DEBUG=1           -O0 -g, and CUDA_CHECK_LAUNCH synchronises after every launch
#   WERROR=1          warnings are errors (default in CI, i.e. when CI is set)
#   SAN=1             build with AddressSanitizer + UBSan
#   ASSIMP=0|1        the assimp formats (glTF, FBX, Collada, MD2, ...; libassimp-dev);
#                     default 1 when pkg-config finds assimp, else 0 (those files
#                     are then refused with a message saying so); with it, glTF
#                     animation samplers are read with cJSON (libcjson-dev) when
#                     pkg-config finds libcjson, else they play as assimp's linear keys
#   BUILD=...         build folder; default one per configuration: build,
#                     build-san (SAN=1), build-debug (DEBUG=1), build-san-debug,
#                     -noassimp appended when ASSIMP=0 although assimp is installed,
#                     so switching configuration never reuses objects.
#                     ./rtviewer is copied from the last configuration built.
CC        ?= cc
CUDA_ARCH ?= sm_90
DEBUG     ?= 0
SAN       ?= 0
WERROR    ?= $(if $(CI),1,0)
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard $(CUDA_HOME)/bin/nvcc))
ASSIMP_FOUND := $(shell pkg-config --exists assimp 2>/dev/null && echo 1)
ASSIMP    ?= $(if $(ASSIMP_FOUND),1,0)
CJSON_FOUND  := $(shell pkg-config --exists libcjson 2>/dev/null && echo 1)
BUILD     ?= build$(if $(filter 1,$(SAN)),-san,)$(if $(filter 1,$(DEBUG)),-debug,)$(if $(and $(ASSIMP_FOUND),$(filter 0,$(ASSIMP))),-noassimp,)
comma     := ,

# Debian packages the project needs (make deps installs the missing ones).
DEB_BUILD := build-essential pkg-config libglfw3-dev libglew-dev libstb-dev libcmocka-dev libassimp-dev libcjson-dev
DEB_TEST  := clang libclang-rt-dev xvfb xdotool libgl1-mesa-dri assimp-testmodels

OPT      := $(if $(filter 1,$(DEBUG)),-O0 -g,-O2 -g)
SANFLAGS := $(if $(filter 1,$(SAN)),-fsanitize=address$(comma)undefined -fno-omit-frame-pointer,)
WARN     := -Wall -Wextra -Wshadow -Wno-missing-field-initializers $(if $(filter 1,$(WERROR)),-Werror,)
CPPFLAGS += -Isrc -Icuda -I/usr/include/stb -DRT_DEBUG=$(DEBUG)
CFLAGS   += -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(SANFLAGS) -pthread
LDLIBS   += -lm -pthread
# assimp is optional as CUDA is: the GPU machine that runs the benchmarks has
# none, and its formats then fail with a clear message (load_assimp.c).
ifeq ($(ASSIMP),1)
  CPPFLAGS += -DRT_HAVE_ASSIMP=1 $(shell pkg-config --cflags assimp)
  LDLIBS   := $(or $(shell pkg-config --libs assimp),-lassimp) $(LDLIBS)
  # glTF samplers (gltf_anim.c): assimp 5.2 drops their interpolation
  ifeq ($(CJSON_FOUND),1)
    CPPFLAGS += -DRT_HAVE_CJSON=1 $(shell pkg-config --cflags libcjson)
    LDLIBS   := $(shell pkg-config --libs libcjson) $(LDLIBS)
  else
    CPPFLAGS += -DRT_HAVE_CJSON=0
  endif
else
  CPPFLAGS += -DRT_HAVE_ASSIMP=0 -DRT_HAVE_CJSON=0
endif

# ---- sources: the pipeline, stage by stage ------------------------------
# The window (GLFW, GLEW, GL) is linked into rtviewer only, so librt.a, the
# tests and the fuzz target need no display libraries.
VIEW_SRC := $(wildcard src/display/*.c)
VIEW_OBJ := $(VIEW_SRC:%.c=$(BUILD)/%.o)
LIB_SRC  := $(filter-out src/app/main.c $(VIEW_SRC),$(wildcard src/*/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
GL_CFLAGS := $(shell pkg-config --cflags glfw3 glew gl 2>/dev/null)
GL_LIBS   := $(or $(shell pkg-config --libs glfw3 glew gl 2>/dev/null),-lglfw -lGLEW -lGL)
# shaders/*.glsl become string constants in a generated header, so the
# binary finds them from any working directory.
SHADERS  := $(sort $(wildcard shaders/*.glsl))
SHADER_H := $(BUILD)/gen/shaders_embedded.h
CU_SRC   := $(wildcard cuda/*/*.cu)
# plain-C parts of the GPU stages (parameters, variant tables), in every build
CU_C_SRC := $(filter-out %_none.c,$(wildcard cuda/*/*.c))

ifneq ($(NVCC),)
  CUDA_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/targets/x86_64-linux/lib))
  NVFLAGS  := -std=c++17 $(OPT) -Isrc -Icuda -DRT_DEBUG=$(DEBUG) -lineinfo \
              -gencode arch=compute_$(CUDA_ARCH:sm_%=%),code=$(CUDA_ARCH) \
              -gencode arch=compute_$(CUDA_ARCH:sm_%=%),code=compute_$(CUDA_ARCH:sm_%=%) \
              -Xcompiler -Wall,-Wextra$(if $(filter 1,$(WERROR)),$(comma)-Werror,) -Werror all-warnings
  GPU_OBJ  := $(CU_SRC:%.cu=$(BUILD)/%.o) $(CU_C_SRC:%.c=$(BUILD)/%.o)
  CPPFLAGS += -DRT_HAVE_CUDA=1
  # Static cudart: the binary runs wherever a driver is, and still starts
  # (then falls back to the CPU) where none is.
  GPU_LIBS := -L$(CUDA_LIBDIR) -lcudart_static -ldl -lrt -lstdc++
else
  GPU_OBJ  := $(patsubst cuda/%.c,$(BUILD)/cuda/%.o,$(wildcard cuda/*/*.c))
  CPPFLAGS += -DRT_HAVE_CUDA=0
  GPU_LIBS :=
endif
# GPU objects form their own archive: a program pulls only the stages it
# calls, and the group lets GPU stages call back into librt (and back).
GPU_LIB := $(BUILD)/librtgpu.a
LINK_RT := -Wl,--start-group $(BUILD)/librt.a $(GPU_LIB) -Wl,--end-group
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
# tests/test_viewer.sh compares screenshots with this helper
PNG_DIFF := $(BUILD)/tests/png_diff

.PHONY: all run test deps deps-test clean fuzz check-cuda check-display
all: check-cuda rtviewer

check-cuda:
	@$(if $(NVCC),echo "build: CUDA kernels with $(NVCC) for $(CUDA_ARCH) (+PTX)",echo "build: no CUDA toolkit found (NVCC empty): building the CPU backend only")
	@$(if $(filter 1,$(ASSIMP)),echo "build: assimp formats (glTF, FBX, Collada, ...) with libassimp $$(pkg-config --modversion assimp 2>/dev/null)$(if $(CJSON_FOUND),; glTF samplers with cJSON $$(pkg-config --modversion libcjson 2>/dev/null),; no libcjson-dev: glTF samplers play linear)",echo "build: without assimp (ASSIMP=0 or no libassimp-dev): glTF, FBX, Collada, ... are refused")

# Linked in the configuration's folder, then copied to ./rtviewer whenever
# that differs (another configuration was built last).
.PHONY: rtviewer
rtviewer: $(BUILD)/rtviewer
	@cmp -s $< $@ || { cp $< $@ && echo "rtviewer: copied from $<"; }
$(BUILD)/rtviewer: $(BUILD)/src/app/main.o $(VIEW_OBJ) $(BUILD)/librt.a $(GPU_LIB)
	$(CC) $(CFLAGS) -o $@ $(BUILD)/src/app/main.o $(VIEW_OBJ) $(LINK_RT) $(GPU_LIBS) $(GL_LIBS) $(LDLIBS)

$(VIEW_OBJ): CPPFLAGS += -I$(BUILD)/gen $(GL_CFLAGS)
$(BUILD)/src/display/gl_display.o: $(SHADER_H)
$(SHADER_H): $(SHADERS) Makefile
	@mkdir -p $(dir $@)
	@{ echo '/* Generated by the Makefile from shaders/NAME.glsl: edit those, not this. */'; \
	   echo 'static const struct { const char *name, *source; } rt_shaders[] = {'; \
	   for f in $(SHADERS); do \
	     echo "    {\"$$(basename $$f .glsl)\","; \
	     sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/     "/' -e 's/$$/\\n"/' $$f; \
	     echo '    },'; \
	   done; \
	   echo '};'; } > $@.tmp && mv $@.tmp $@

$(GPU_LIB): $(GPU_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/librt.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# load_assimp.o and gltf_anim.o are compiled one way or the other: one stamp
# per value, so that libassimp-dev or libcjson-dev installed later (or
# ASSIMP=0 given) rebuilds them.
ASSIMP_STAMP := $(BUILD)/gen/assimp-$(ASSIMP)$(if $(filter 1,$(ASSIMP)),-cjson$(or $(CJSON_FOUND),0),)
$(BUILD)/src/scene/load_assimp.o $(BUILD)/src/scene/gltf_anim.o: $(ASSIMP_STAMP)
$(ASSIMP_STAMP):
	@mkdir -p $(dir $@) && rm -f $(BUILD)/gen/assimp-* && touch $@

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/cuda/%.o: cuda/%.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -MMD -MP -c $< -o $@
# the host emulation switches lane stacks with _longjmp (cuda/trace/trace_emu.cu)
$(BUILD)/cuda/trace/trace_emu.o: NVFLAGS += -Xcompiler -U_FORTIFY_SOURCE

$(BUILD)/tests/%: tests/%.c tests/test_util.h tests/trace_check.h tests/soup.h tests/load_child.h $(BUILD)/librt.a $(GPU_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CFLAGS) -o $@ $< $(LINK_RT) $(GPU_LIBS) -lcmocka $(LDLIBS)

# tests/test_viewer.sh's screenshot comparison: a plain program, no cmocka
$(PNG_DIFF): tests/png_diff.c $(BUILD)/librt.a $(GPU_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LINK_RT) $(GPU_LIBS) $(LDLIBS)

# ---- set-up ---------------------------------------------------------------
# Installs the missing Debian packages: as root directly, else via sudo, else
# prints the exact command and stops.
deps:
	@sh tests/deps.sh $(DEB_BUILD)
deps-test:
	@sh tests/deps.sh $(DEB_BUILD) $(DEB_TEST)

# The window needs a display: say so before building, not after.
run: check-display deps
	@$(MAKE) --no-print-directory all
	./rtviewer $(ARGS)

check-display:
	@if [ -z "$$DISPLAY" ] && [ -z "$$WAYLAND_DISPLAY" ] && ! echo " $(ARGS) " | grep -qE ' --(headless|bench|gpu-info|help) '; then \
	  echo "make run: no display (DISPLAY and WAYLAND_DISPLAY are unset): the window cannot open."; \
	  echo "  render without a window:  make run ARGS='--headless -o out.png'   (or ./rtviewer --headless)"; \
	  echo "  or under a virtual X server:  xvfb-run -s '-screen 0 1280x720x24' make run"; \
	  exit 1; fi

test: deps-test
	@$(MAKE) --no-print-directory all $(TEST_BIN) $(PNG_DIFF) $(if $(shell command -v clang 2>/dev/null),fuzz,)
	@RT_BUILD=$(BUILD) RT_NVCC="$(NVCC)" RT_NVFLAGS="$(NVFLAGS)" sh tests/run.sh $(TEST_BIN)

# libFuzzer target over all loaders (tests/fuzz/README.md). Built with clang,
# without assimp: it fuzzes the project's own parsers, not the library.
# fuzz_aff: the BART AFF loader and its keyframes (tests/fuzz/README.md).
FUZZ_BIN := $(BUILD)/fuzz_loaders $(BUILD)/fuzz_aff
fuzz: $(FUZZ_BIN)
$(FUZZ_BIN): $(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(LIB_SRC) $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	clang -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=fuzzer,address,undefined -Isrc -Icuda -I/usr/include/stb \
	  -DRT_HAVE_CUDA=0 -DRT_HAVE_ASSIMP=0 -DRT_DEBUG=0 -o $@ $< $(LIB_SRC) $(wildcard cuda/*/*.c) -lm -pthread
# fuzz_gltf: the glTF animation-sampler reader (gltf_anim.c, with cJSON);
# built where libcjson is, as that reader is.
ifeq ($(CJSON_FOUND),1)
fuzz: $(BUILD)/fuzz_gltf
$(BUILD)/fuzz_gltf: tests/fuzz/fuzz_gltf.c src/scene/gltf_anim.c src/core/rt_base.c $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	clang -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=fuzzer,address,undefined -Isrc -Icuda \
	  -DRT_HAVE_CUDA=0 -DRT_HAVE_ASSIMP=1 -DRT_HAVE_CJSON=1 $(shell pkg-config --cflags libcjson) -DRT_DEBUG=0 \
	  -o $@ $< src/scene/gltf_anim.c src/core/rt_base.c $(shell pkg-config --libs libcjson) -lm -pthread
endif

# ---- benchmark ----------------------------------------------------------------
# rtviewer --bench over scenes x build variants x trace variants
# (tests/bench/run.sh): JSON/CSV in BENCH_OUT, markdown tables spliced into
# docs/benchmarks.md between its bench:begin/end markers, gnuplot PNGs in
# docs/img/. Without a GPU it runs the CPU path with few frames and says so.
# BENCH_ARGS: environment for run.sh, e.g. BENCH_ARGS="BENCH_QUICK=1 BENCH_DOCS=0".
DEB_BENCH := gnuplot-nox
BENCH_OUT ?= $(BUILD)/bench
BENCH_ARGS ?=
.PHONY: bench
bench:
	@sh tests/deps.sh $(DEB_BENCH) || echo "bench: no gnuplot: tables only, no plots"
	@$(MAKE) --no-print-directory all
	@env BENCH_OUT=$(BENCH_OUT) RTVIEWER=./rtviewer $(BENCH_ARGS) bash tests/bench/run.sh

# build ms, references and frame ms against triangle count, 0.1M .. 20M
# (tests/bench/scaling.sh, issues 20 and 21): the wavy grid and the Sponza
# city per structure, the peer H-PLOC builder when .peers/nexus is there;
# table and plots spliced between docs/benchmarks.md's scaling:begin/end
# markers. Same BENCH_ARGS; results in $(BENCH_OUT)/scaling.
.PHONY: scaling
scaling:
	@sh tests/deps.sh $(DEB_BENCH) || echo "scaling: no gnuplot: tables only, no plots"
	@$(MAKE) --no-print-directory all
	@env BENCH_OUT=$(BENCH_OUT)/scaling RTVIEWER=./rtviewer $(BENCH_ARGS) bash tests/bench/scaling.sh

# Every configuration's folder (build/ext, the unpacked assets, included).
clean:
	rm -rf build build-san build-debug build-san-debug $(wildcard build*-noassimp) $(filter-out build build-san build-debug build-san-debug,$(BUILD)) rtviewer

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
