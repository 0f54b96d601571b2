#include "core/common/image.h"
