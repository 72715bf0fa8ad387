// The public API of Tempo: include this.
#pragma once

#include "api/context.h"
#include "api/distributed.h"
#include "api/rt.h"
#include "symbolic/expr.h"
