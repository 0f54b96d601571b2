#include "core/image/pillow_resize.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace lector::image {
namespace {

// Fixed-point precision of Pillow's 8-bit path: 32 bits - 8 (pixel) - 2 (headroom for sums).
constexpr int kPrecisionBits = 32 - 8 - 2;
constexpr double kBicubicSupport = 2.0;

// Keys cubic with a = -0.5 (Pillow's bicubic_filter).
double bicubic(double x)
{
    constexpr double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
    return 0.0;
}

// Per output pixel: the first input index, the tap count, and ksize fixed-point weights.
struct Coeffs {
    int ksize = 0;
    std::vector<int> first;         // [outSize]
    std::vector<int> count;         // [outSize]
    std::vector<std::int32_t> k;    // [outSize, ksize]
};

// Pillow's precompute_coeffs + normalize_coeffs_8bpc for the box [0, inSize).
Coeffs computeCoeffs(int inSize, int outSize)
{
    const double scale = static_cast<double>(inSize) / outSize;
    const double filterScale = scale < 1.0 ? 1.0 : scale;  // antialias only when shrinking
    const double support = kBicubicSupport * filterScale;
    Coeffs c;
    c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
    c.first.resize(outSize);
    c.count.resize(outSize);
    c.k.assign(static_cast<size_t>(outSize) * c.ksize, 0);
    std::vector<double> w(c.ksize);
    const double invFilterScale = 1.0 / filterScale;
    for (int xx = 0; xx < outSize; ++xx) {
        const double center = (xx + 0.5) * scale;
        // Pillow rounds with (int)(v + 0.5), i.e. truncation toward zero, then clamps.
        int xmin = static_cast<int>(center - support + 0.5);
        if (xmin < 0) xmin = 0;
        int xmax = static_cast<int>(center + support + 0.5);
        if (xmax > inSize) xmax = inSize;
        xmax -= xmin;
        double sum = 0.0;
        for (int x = 0; x < xmax; ++x) {
            w[x] = bicubic((x + xmin - center + 0.5) * invFilterScale);
            sum += w[x];
        }
        std::int32_t* k = &c.k[static_cast<size_t>(xx) * c.ksize];
        for (int x = 0; x < xmax; ++x) {
            const double v = sum != 0.0 ? w[x] / sum : w[x];
            const double scaled = v * (1 << kPrecisionBits);
            k[x] = static_cast<std::int32_t>(v < 0 ? -0.5 + scaled : 0.5 + scaled);
        }
        c.first[xx] = xmin;
        c.count[xx] = xmax;
    }
    return c;
}

inline std::uint8_t clip8(std::int32_t v)
{
    if (v >= (1 << kPrecisionBits << 8)) return 255;
    if (v <= 0) return 0;
    return static_cast<std::uint8_t>(v >> kPrecisionBits);
}

// Horizontal pass over rows [rowBegin, rowBegin + numRows) of src into a packed numRows x outW buffer.
void resampleHorizontal(const std::uint8_t* src, int srcW, int channels, int rowBegin, int numRows,
                        const Coeffs& c, int outW, std::uint8_t* out)
{
    const size_t srcStride = static_cast<size_t>(srcW) * channels;
    for (int y = 0; y < numRows; ++y) {
        const std::uint8_t* in = src + static_cast<size_t>(rowBegin + y) * srcStride;
        std::uint8_t* o = out + static_cast<size_t>(y) * outW * channels;
        for (int xx = 0; xx < outW; ++xx) {
            const std::int32_t* k = &c.k[static_cast<size_t>(xx) * c.ksize];
            const std::uint8_t* p = in + static_cast<size_t>(c.first[xx]) * channels;
            for (int ch = 0; ch < channels; ++ch) {
                std::int32_t ss = 1 << (kPrecisionBits - 1);  // rounding offset
                for (int x = 0; x < c.count[xx]; ++x) ss += p[x * channels + ch] * k[x];
                o[xx * channels + ch] = clip8(ss);
            }
        }
    }
}

// Vertical pass; c.first is relative to the first row held in src.
void resampleVertical(const std::uint8_t* src, int width, int channels, const Coeffs& c, int firstRowOffset,
                      int outH, std::uint8_t* out)
{
    const size_t stride = static_cast<size_t>(width) * channels;
    std::vector<std::int32_t> acc(stride);
    for (int yy = 0; yy < outH; ++yy) {
        const std::int32_t* k = &c.k[static_cast<size_t>(yy) * c.ksize];
        std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
        const int ymin = c.first[yy] - firstRowOffset;
        for (int y = 0; y < c.count[yy]; ++y) {
            const std::uint8_t* row = src + static_cast<size_t>(ymin + y) * stride;
            const std::int32_t w = k[y];
            for (size_t i = 0; i < stride; ++i) acc[i] += row[i] * w;
        }
        std::uint8_t* o = out + static_cast<size_t>(yy) * stride;
        for (size_t i = 0; i < stride; ++i) o[i] = clip8(acc[i]);
    }
}

}  // namespace

void resizeBicubicPillow(const std::uint8_t* src, int srcWidth, int srcHeight, int channels, std::uint8_t* dst,
                         int dstWidth, int dstHeight)
{
    if (srcWidth <= 0 || srcHeight <= 0 || dstWidth <= 0 || dstHeight <= 0 || channels < 1 || channels > 4)
        throw std::invalid_argument("resizeBicubicPillow: sizes must be positive and channels 1..4");
    const bool needH = dstWidth != srcWidth;
    const bool needV = dstHeight != srcHeight;
    if (!needH && !needV) {
        std::memcpy(dst, src, static_cast<size_t>(srcWidth) * srcHeight * channels);
        return;
    }
    const Coeffs ch = computeCoeffs(srcWidth, dstWidth);
    const Coeffs cv = computeCoeffs(srcHeight, dstHeight);
    if (!needV) {
        resampleHorizontal(src, srcWidth, channels, 0, srcHeight, ch, dstWidth, dst);
        return;
    }
    if (!needH) {
        resampleVertical(src, srcWidth, channels, cv, 0, dstHeight, dst);
        return;
    }
    // Like Pillow, the horizontal pass only covers the source rows the vertical pass will read.
    const int rowFirst = cv.first.front();
    const int rowLast = cv.first.back() + cv.count.back();
    std::vector<std::uint8_t> tmp(static_cast<size_t>(rowLast - rowFirst) * dstWidth * channels);
    resampleHorizontal(src, srcWidth, channels, rowFirst, rowLast - rowFirst, ch, dstWidth, tmp.data());
    resampleVertical(tmp.data(), dstWidth, channels, cv, rowFirst, dstHeight, dst);
}

Image resizeBicubicPillow(const Image& src, int width, int height)
{
    if (src.empty()) throw std::invalid_argument("resizeBicubicPillow: empty source image");
    Image out(width, height);
    resizeBicubicPillow(src.rgb.data(), src.width, src.height, 3, out.rgb.data(), width, height);
    return out;
}

}  // namespace lector::image
