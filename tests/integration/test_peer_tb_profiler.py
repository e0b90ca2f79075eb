# ruff: noqa: E501  (reference data: long kernel names)
"""stepscope vs torch-tb-profiler 0.4.3 on the four kineto_resnet50 traces.

The reference figures below were computed with torch-tb-profiler 0.4.3 (unrounded values of
``OverallParser.Costs``, ``GPUMetricsParser``, ``OperatorAgg`` and ``KernelParser``, all in
µs) and are copied here as literals because the peer tool is not installed in CI.
Agreement required: 1 % relative for times, 0.5 points for percentages. stepscope currently
reproduces every figure exactly (integer-µs traces).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.conftest import shared_trace

import stepscope
from stepscope.analysis.trace.breakdown import CATEGORIES
from stepscope.report.build import Report, build_report

REL = 0.01  # 1 % relative for durations
PTS = 0.5  # 0.5 points for percentages

# fmt: off
TB: dict[str, dict[str, Any]] = {
    '1623143089861': {'path': 'kineto_resnet50/num_workers_0/worker0.1623143089861.pt.trace.json.gz',
     'steps': [('5', 1623142623460172, 187948),
               ('6', 1623142623648120, 175153),
               ('7', 1623142623823273, 179733),
               ('8', 1623142624003006, 174564),
               ('9', 1623142624177570, 182172),
               ('10', 1623142624359742, 165983)],
     'step_breakdown': [(98598, 1941, 90, 0, 2796, 69317, 14091, 1115),
                        (98570, 1947, 89, 0, 2762, 57669, 12968, 1148),
                        (98596, 1931, 91, 0, 2877, 61257, 13768, 1213),
                        (98623, 1938, 89, 0, 2841, 56453, 13420, 1200),
                        (98504, 1937, 87, 0, 2788, 62690, 15025, 1141),
                        (98641, 1798, 88, 0, 3381, 48185, 12773, 1117)],
     'averages': {'kernel': 98588.667,
                  'memcpy': 1915.333,
                  'memset': 89.0,
                  'communication': 0.0,
                  'runtime': 2907.5,
                  'dataloader': 59261.833,
                  'cpu_exec': 13674.167,
                  'other': 1155.667,
                  'total': 177592.167},
     'pct': {'kernel': 55.514,
             'memcpy': 1.079,
             'memset': 0.05,
             'communication': 0.0,
             'runtime': 1.637,
             'dataloader': 33.37,
             'cpu_exec': 7.7,
             'other': 0.651},
     'gpu_util_pct': 55.514,
     'sm_eff_pct': 54.679,
     'occupancy_pct': 49.128,
     'tc_pct': 0.0,
     'n_operators': 76,
     'n_kernels': 67,
     'operators': [('aten::cudnn_convolution_backward_weight', 318, 22804, 40246, 142461, 142461),
                   ('aten::cudnn_convolution_backward_input', 312, 29324, 41445, 130967, 130967),
                   ('aten::cudnn_convolution', 318, 33121, 56998, 126619, 126619),
                   ('aten::cudnn_batch_norm_backward', 318, 12238, 30460, 61939, 61939),
                   ('aten::cudnn_batch_norm', 318, 19843, 71527, 34245, 34245),
                   ('aten::threshold_backward', 294, 6090, 9482, 27298, 27298),
                   ('aten::add_', 2994, 51013, 78125, 24098, 24098),
                   ('aten::clamp_min', 294, 7106, 10311, 17860, 17860),
                   ('aten::add', 414, 14329, 19289, 16038, 16038),
                   ('aten::copy_', 588, 40255, 52853, 11492, 11492),
                   ('aten::max_pool2d_with_indices_backward', 6, 176, 411, 3822, 4677),
                   ('aten::mul_', 966, 20515, 29081, 2409, 2409),
                   ('aten::fill_', 978, 9879, 17059, 1887, 1887),
                   ('aten::max_pool2d_with_indices', 6, 477, 562, 1420, 1420),
                   ('aten::mm', 12, 575, 860, 275, 275)],
     'kernels': [('void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, '
                  'float const*, int, float const*, int, float*, kernel_grad_params, unsigned long '
                  'long, int, unsigned long long, int, float, int, int, int)',
                  162,
                  80756,
                  498.494,
                  323,
                  1017,
                  42.246,
                  29.971),
                 ('void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, '
                  'int, float const*, int, float*, float const*, kernel_grad_params, unsigned long '
                  'long, int, float, int, int, int, int)',
                  156,
                  66472,
                  426.103,
                  345,
                  745,
                  9.782,
                  38.0),
                 ('void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float, '
                  'float, float, cudnnTensorStruct, float const*, cudnnTensorStruct, float const*, '
                  'cudnnTensorStruct, float*, float const*, float*, float*, float const*, float '
                  'const*, float)',
                  264,
                  59642,
                  225.917,
                  45,
                  915,
                  4.338,
                  67.981),
                 ('void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, '
                  'at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, '
                  'at::detail::Array<char*, 3>)',
                  3090,
                  39814,
                  12.885,
                  1,
                  378,
                  641.537,
                  92.32),
                 ('void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, '
                  'true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, '
                  'unsigned long long, int, float, float, int, float const*, float const*, bool, int, '
                  'int)',
                  90,
                  36957,
                  410.633,
                  347,
                  748,
                  12.344,
                  50.0),
                 ('void at::native::vectorized_elementwise_kernel<4, '
                  'at::native::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, '
                  'float)::{lambda(float, float)#1}, at::detail::Array<char*, 3> >(int, '
                  'at::native::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, '
                  'float)::{lambda(float, float)#1}, at::detail::Array<char*, 3>)',
                  294,
                  27298,
                  92.85,
                  13,
                  377,
                  653.055,
                  100.0),
                 ('void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, '
                  '1>(cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float '
                  'const*, float, float, float*, float*, float*, float*, float, float)',
                  150,
                  27060,
                  180.4,
                  53,
                  452,
                  3.122,
                  64.055),
                 ('void implicit_convolve_sgemm<float, float, 128, 6, 7, 3, 3, 5, 1, false, true, '
                  'true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, '
                  'unsigned long long, int, float, float, int, float const*, float const*, bool, int, '
                  'int)',
                  60,
                  25782,
                  429.7,
                  352,
                  729,
                  3.897,
                  42.093),
                 ('volta_sgemm_64x64_nt', 102, 21084, 206.706, 184, 279, 10.242, 19.377),
                 ('volta_scudnn_128x128_stridedB_splitK_small_nn_v1',
                  48,
                  20448,
                  426.0,
                  307,
                  676,
                  6.825,
                  25.0),
                 ('void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous '
                  'namespace)::clamp_min_scalar_kernel_impl(at::TensorIterator&, '
                  'c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#8}::operator()() '
                  'const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous '
                  'namespace)::clamp_min_scalar_kernel_impl(at::TensorIterator&, '
                  'c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#8}::operator()() '
                  'const::{lambda(float)#1}, at::detail::Array<char*, 2>)',
                  294,
                  17860,
                  60.748,
                  5,
                  252,
                  666.646,
                  100.0),
                 ('volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1',
                  36,
                  12704,
                  352.889,
                  344,
                  362,
                  22.4,
                  25.0),
                 ('volta_scudnn_128x64_stridedB_interior_nn_v1',
                  30,
                  9597,
                  319.9,
                  252,
                  510,
                  12.901,
                  19.0),
                 ('volta_sgemm_128x32_nt', 24, 8629, 359.542, 18, 477, 0.972, 11.511),
                 ('volta_sgemm_64x64_nn', 42, 8551, 203.595, 195, 217, 12.344, 24.143)]},
    '1623143566756': {'path': 'kineto_resnet50/num_workers_0/worker0.1623143566756.pt.trace.json.gz',
     'steps': [('16', 1623143093496582, 171772),
               ('17', 1623143093668354, 149553),
               ('18', 1623143093817907, 149803),
               ('19', 1623143093967710, 149532),
               ('20', 1623143094117242, 154343),
               ('21', 1623143094271585, 154465)],
     'step_breakdown': [(98420, 1654, 88, 0, 9789, 46723, 13876, 1222),
                        (98471, 1654, 89, 0, 2759, 32390, 13054, 1136),
                        (98654, 1658, 88, 0, 2742, 32269, 13202, 1190),
                        (98580, 1809, 90, 0, 2671, 31857, 13307, 1218),
                        (98645, 1815, 88, 0, 2726, 35146, 14735, 1188),
                        (98439, 1813, 90, 0, 3633, 34637, 14544, 1309)],
     'averages': {'kernel': 98534.833,
                  'memcpy': 1733.833,
                  'memset': 88.833,
                  'communication': 0.0,
                  'runtime': 4053.333,
                  'dataloader': 35503.667,
                  'cpu_exec': 13786.333,
                  'other': 1210.5,
                  'total': 154911.333},
     'pct': {'kernel': 63.607,
             'memcpy': 1.119,
             'memset': 0.057,
             'communication': 0.0,
             'runtime': 2.617,
             'dataloader': 22.919,
             'cpu_exec': 8.899,
             'other': 0.781},
     'gpu_util_pct': 63.607,
     'sm_eff_pct': 62.651,
     'occupancy_pct': 49.136,
     'tc_pct': 0.0,
     'n_operators': 76,
     'n_kernels': 67,
     'operators': [('aten::cudnn_convolution_backward_weight', 318, 22141, 39432, 142531, 142531),
                   ('aten::cudnn_convolution_backward_input', 312, 28531, 40647, 130769, 130769),
                   ('aten::cudnn_convolution', 318, 33137, 57256, 126500, 126500),
                   ('aten::cudnn_batch_norm_backward', 318, 11660, 28180, 61857, 61857),
                   ('aten::cudnn_batch_norm', 318, 19780, 72004, 34296, 34296),
                   ('aten::threshold_backward', 294, 6013, 9362, 27300, 27300),
                   ('aten::add_', 2994, 55245, 83883, 24072, 24072),
                   ('aten::clamp_min', 294, 7151, 10384, 17856, 17856),
                   ('aten::add', 414, 14378, 19329, 16029, 16029),
                   ('aten::copy_', 588, 32536, 50876, 10403, 10403),
                   ('aten::max_pool2d_with_indices_backward', 6, 174, 407, 3817, 4673),
                   ('aten::mul_', 966, 22880, 32291, 2409, 2409),
                   ('aten::fill_', 978, 9827, 16948, 1885, 1885),
                   ('aten::max_pool2d_with_indices', 6, 464, 548, 1417, 1417),
                   ('aten::mm', 12, 582, 878, 276, 276)],
     'kernels': [('void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, '
                  'float const*, int, float const*, int, float*, kernel_grad_params, unsigned long '
                  'long, int, unsigned long long, int, float, int, int, int)',
                  162,
                  80683,
                  498.043,
                  324,
                  1016,
                  42.284,
                  29.971),
                 ('void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, '
                  'int, float const*, int, float*, float const*, kernel_grad_params, unsigned long '
                  'long, int, float, int, int, int, int)',
                  156,
                  66530,
                  426.474,
                  346,
                  747,
                  9.787,
                  38.0),
                 ('void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float, '
                  'float, float, cudnnTensorStruct, float const*, cudnnTensorStruct, float const*, '
                  'cudnnTensorStruct, float*, float const*, float*, float*, float const*, float '
                  'const*, float)',
                  264,
                  59568,
                  225.636,
                  46,
                  914,
                  4.336,
                  67.993),
                 ('void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, '
                  'at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, '
                  'at::detail::Array<char*, 3>)',
                  3090,
                  39780,
                  12.874,
                  1,
                  377,
                  641.805,
                  92.35),
                 ('void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, '
                  'true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, '
                  'unsigned long long, int, float, float, int, float const*, float const*, bool, int, '
                  'int)',
                  90,
                  36894,
                  409.933,
                  347,
                  741,
                  12.349,
                  50.0),
                 ('void at::native::vectorized_elementwise_kernel<4, '
                  'at::native::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, '
                  'float)::{lambda(float, float)#1}, at::detail::Array<char*, 3> >(int, '
                  'at::native::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, '
                  'float)::{lambda(float, float)#1}, at::detail::Array<char*, 3>)',
                  294,
                  27300,
                  92.857,
                  13,
                  377,
                  652.97,
                  100.0),
                 ('void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, '
                  '1>(cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float '
                  'const*, float, float, float*, float*, float*, float*, float, float)',
                  150,
                  27089,
                  180.593,
                  53,
                  454,
                  3.118,
                  64.002),
                 ('void implicit_convolve_sgemm<float, float, 128, 6, 7, 3, 3, 5, 1, false, true, '
                  'true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, '
                  'unsigned long long, int, float, float, int, float const*, float const*, bool, int, '
                  'int)',
                  60,
                  25824,
                  430.4,
                  350,
                  729,
                  3.9,
                  42.113),
                 ('volta_sgemm_64x64_nt', 102, 21042, 206.294, 184, 279, 10.244, 19.375),
                 ('volta_scudnn_128x128_stridedB_splitK_small_nn_v1',
                  48,
                  20452,
                  426.083,
                  308,
                  678,
                  6.823,
                  25.0),
                 ('void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous '
                  'namespace)::clamp_min_scalar_kernel_impl(at::TensorIterator&, '
                  'c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#8}::operator()() '
                  'const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous '
                  'namespace)::clamp_min_scalar_kernel_impl(at::TensorIterator&, '
                  'c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#8}::operator()() '
                  'const::{lambda(float)#1}, at::detail::Array<char*, 2>)',
                  294,
                  17856,
                  60.735,
                  5,
                  252,
                  667.017,
                  100.0),
                 ('volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1',
                  36,
                  12740,
                  353.889,
                  345,
                  362,
                  22.4,
                  25.0),
                 ('volta_scudnn_128x64_stridedB_interior_nn_v1',
                  30,
                  9527,
                  317.567,
                  257,
                  509,
                  12.923,
                  19.0),
                 ('volta_sgemm_128x32_nt', 24, 8627, 359.458, 18, 479, 0.971, 11.502),
                 ('volta_sgemm_64x64_nn', 42, 8554, 203.667, 196, 213, 12.345, 24.144)]},
    '1623212756351': {'path': 'kineto_resnet50/num_workers_4/worker0.1623212756351.pt.trace.json.gz',
     'steps': [('5', 1623212388426996, 182306),
               ('6', 1623212388609302, 126183),
               ('7', 1623212388735485, 127181),
               ('8', 1623212388862666, 123079),
               ('9', 1623212388985809, 163461),
               ('10', 1623212389149340, 124198)],
     'step_breakdown': [(99778, 3606, 98, 0, 41028, 4341, 27460, 5995),
                        (99208, 2948, 98, 0, 3406, 0, 16404, 4119),
                        (99114, 2949, 98, 0, 3417, 6, 19521, 2076),
                        (99021, 2975, 97, 0, 3544, 0, 15464, 1978),
                        (98791, 3596, 97, 0, 8275, 1370, 43905, 7427),
                        (98956, 2885, 98, 0, 3714, 1400, 13235, 3910)],
     'averages': {'kernel': 99144.667,
                  'memcpy': 3159.833,
                  'memset': 97.667,
                  'communication': 0.0,
                  'runtime': 10564.0,
                  'dataloader': 1186.167,
                  'cpu_exec': 22664.833,
                  'other': 4250.833,
                  'total': 141068.0},
     'pct': {'kernel': 70.281,
             'memcpy': 2.24,
             'memset': 0.069,
             'communication': 0.0,
             'runtime': 7.489,
             'dataloader': 0.841,
             'cpu_exec': 16.067,
             'other': 3.013},
     'gpu_util_pct': 70.27,
     'sm_eff_pct': 69.225,
     'occupancy_pct': 48.91,
     'tc_pct': 0.0,
     'n_operators': 69,
     'n_kernels': 62,
     'operators': [('aten::cudnn_convolution_backward_weight', 318, 30672, 60712, 141300, 141300),
                   ('aten::cudnn_convolution_backward_input', 312, 31902, 47359, 133494, 133494),
                   ('aten::cudnn_convolution', 318, 35632, 64167, 128683, 128683),
                   ('aten::cudnn_batch_norm_backward', 318, 15118, 36641, 61899, 61899),
                   ('aten::cudnn_batch_norm', 318, 23800, 87823, 34315, 34315),
                   ('aten::threshold_backward', 294, 7820, 12062, 27280, 27280),
                   ('aten::add_', 2994, 62385, 97540, 24052, 24052),
                   ('aten::copy_', 12, 230, 56915, 18959, 18959),
                   ('aten::clamp_min', 294, 8409, 12503, 17862, 17862),
                   ('aten::add', 414, 17808, 23831, 16026, 16026),
                   ('aten::max_pool2d_with_indices_backward', 6, 213, 493, 3838, 4695),
                   ('aten::mul_', 966, 24617, 35389, 2395, 2395),
                   ('aten::fill_', 978, 9660, 17657, 1888, 1888),
                   ('aten::max_pool2d_with_indices', 6, 325, 422, 1422, 1422),
                   ('aten::mm', 12, 1032, 1424, 274, 274)],
     'kernels': [('void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, '
                  'float const*, int, float const*, int, float*, kernel_grad_params, unsigned long '
                  'long, int, unsigned long long, int, float, int, int, int)',
                  180,
                  86855,
                  482.528,
                  323,
                  1023,
                  45.331,
                  30.041),
                 ('void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float, '
                  'float, float, cudnnTensorStruct, float const*, cudnnTensorStruct, float const*, '
                  'cudnnTensorStruct, float*, float const*, float*, float*, float const*, float '
                  'const*, float)',
                  264,
                  59568,
                  225.636,
                  45,
                  923,
                  4.333,
                  67.921),
                 ('void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, '
                  'int, float const*, int, float*, float const*, kernel_grad_params, unsigned long '
                  'long, int, float, int, int, int, int)',
                  90,
                  43471,
                  483.011,
                  363,
                  742,
                  8.184,
                  38.0),
                 ('void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, '
                  'at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, '
                  'at::detail::Array<char*, 3>)',
                  3090,
                  39753,
                  12.865,
                  1,
                  376,
                  641.508,
                  92.345),
                 ('void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, '
                  'true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, '
                  'unsigned long long, int, float, float, int, float const*, float const*, bool, int, '
                  'int)',
                  90,
                  37016,
                  411.289,
                  346,
                  735,
                  12.386,
                  50.0),
                 ('void implicit_convolve_sgemm<float, float, 128, 6, 7, 3, 3, 5, 1, false, true, '
                  'true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, '
                  'unsigned long long, int, float, float, int, float const*, float const*, bool, int, '
                  'int)',
                  72,
                  35106,
                  487.583,
                  350,
                  822,
                  3.834,
                  41.636),
                 ('void at::native::vectorized_elementwise_kernel<4, '
                  'at::native::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, '
                  'float)::{lambda(float, float)#1}, at::detail::Array<char*, 3> >(int, '
                  'at::native::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, '
                  'float)::{lambda(float, float)#1}, at::detail::Array<char*, 3>)',
                  294,
                  27280,
                  92.789,
                  13,
                  377,
                  653.256,
                  100.0),
                 ('void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, '
                  '1>(cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float '
                  'const*, float, float, float*, float*, float*, float*, float, float)',
                  150,
                  27084,
                  180.56,
                  53,
                  454,
                  3.118,
                  64.017),
                 ('volta_scudnn_128x128_stridedB_splitK_medium_nn_v1',
                  72,
                  25342,
                  351.972,
                  323,
                  629,
                  3.211,
                  25.0),
                 ('volta_sgemm_64x64_nt', 102, 21125, 207.108, 184, 281, 10.28, 19.383),
                 ('volta_scudnn_128x128_stridedB_splitK_small_nn_v1',
                  48,
                  20473,
                  426.521,
                  309,
                  681,
                  6.825,
                  25.0),
                 ('void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous '
                  'namespace)::clamp_min_scalar_kernel_impl(at::TensorIterator&, '
                  'c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#8}::operator()() '
                  'const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous '
                  'namespace)::clamp_min_scalar_kernel_impl(at::TensorIterator&, '
                  'c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#8}::operator()() '
                  'const::{lambda(float)#1}, at::detail::Array<char*, 2>)',
                  294,
                  17862,
                  60.755,
                  5,
                  252,
                  666.773,
                  100.0),
                 ('volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1',
                  36,
                  12761,
                  354.472,
                  344,
                  365,
                  22.4,
                  25.0),
                 ('volta_scudnn_128x64_stridedB_interior_nn_v1',
                  30,
                  9559,
                  318.633,
                  255,
                  508,
                  12.915,
                  19.0),
                 ('volta_sgemm_128x32_nt', 24, 8658, 360.75, 18, 479, 0.972, 11.509)]},
    '1623213129365': {'path': 'kineto_resnet50/num_workers_4/worker0.1623213129365.pt.trace.json.gz',
     'steps': [('16', 1623212760127888, 170134),
               ('17', 1623212760298022, 122520),
               ('18', 1623212760420542, 123217),
               ('19', 1623212760543759, 118625),
               ('20', 1623212760662384, 119738),
               ('21', 1623212760782122, 202617)],
     'step_breakdown': [(99384, 2866, 98, 0, 46518, 1716, 14941, 4611),
                        (99116, 2887, 98, 0, 3807, 11, 14889, 1712),
                        (98770, 2877, 99, 0, 3558, 11, 16501, 1401),
                        (98901, 2832, 97, 0, 3326, 6, 12301, 1162),
                        (99162, 2855, 97, 0, 2816, 7, 12858, 1943),
                        (98930, 2991, 98, 0, 3460, 0, 14389, 82749)],
     'averages': {'kernel': 99043.833,
                  'memcpy': 2884.667,
                  'memset': 97.833,
                  'communication': 0.0,
                  'runtime': 10580.833,
                  'dataloader': 291.833,
                  'cpu_exec': 14313.167,
                  'other': 15596.333,
                  'total': 142808.5},
     'pct': {'kernel': 69.354,
             'memcpy': 2.02,
             'memset': 0.069,
             'communication': 0.0,
             'runtime': 7.409,
             'dataloader': 0.204,
             'cpu_exec': 10.023,
             'other': 10.921},
     'gpu_util_pct': 69.354,
     'sm_eff_pct': 68.322,
     'occupancy_pct': 48.914,
     'tc_pct': 0.0,
     'n_operators': 69,
     'n_kernels': 62,
     'operators': [('aten::cudnn_convolution_backward_weight', 318, 27283, 52020, 141120, 141120),
                   ('aten::cudnn_convolution_backward_input', 312, 28088, 41360, 133780, 133780),
                   ('aten::cudnn_convolution', 318, 31387, 55144, 127955, 127955),
                   ('aten::cudnn_batch_norm_backward', 318, 13026, 30882, 61932, 61932),
                   ('aten::cudnn_batch_norm', 318, 20260, 72582, 34265, 34265),
                   ('aten::threshold_backward', 294, 6852, 10554, 27301, 27301),
                   ('aten::add_', 2994, 57889, 89810, 24080, 24080),
                   ('aten::clamp_min', 294, 7022, 10723, 17855, 17855),
                   ('aten::copy_', 12, 201, 86748, 17308, 17308),
                   ('aten::add', 414, 15211, 20609, 16030, 16030),
                   ('aten::max_pool2d_with_indices_backward', 6, 184, 418, 3825, 4681),
                   ('aten::mul_', 966, 23646, 34074, 2404, 2404),
                   ('aten::fill_', 978, 9465, 17385, 1881, 1881),
                   ('aten::max_pool2d_with_indices', 6, 284, 370, 1420, 1420),
                   ('aten::mm', 12, 675, 1007, 276, 276)],
     'kernels': [('void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, '
                  'float const*, int, float const*, int, float*, kernel_grad_params, unsigned long '
                  'long, int, unsigned long long, int, float, int, int, int)',
                  180,
                  87160,
                  484.222,
                  327,
                  1029,
                  45.258,
                  30.045),
                 ('void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float, float, '
                  'float, float, cudnnTensorStruct, float const*, cudnnTensorStruct, float const*, '
                  'cudnnTensorStruct, float*, float const*, float*, float*, float const*, float '
                  'const*, float)',
                  264,
                  59591,
                  225.723,
                  45,
                  926,
                  4.334,
                  67.905),
                 ('void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, '
                  'int, float const*, int, float*, float const*, kernel_grad_params, unsigned long '
                  'long, int, float, int, int, int, int)',
                  90,
                  43330,
                  481.444,
                  352,
                  748,
                  8.182,
                  38.0),
                 ('void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, '
                  'at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, '
                  'at::detail::Array<char*, 3>)',
                  3090,
                  39787,
                  12.876,
                  1,
                  377,
                  641.416,
                  92.332),
                 ('void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, '
                  'true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, '
                  'unsigned long long, int, float, float, int, float const*, float const*, bool, int, '
                  'int)',
                  90,
                  36902,
                  410.022,
                  347,
                  724,
                  12.351,
                  50.0),
                 ('void implicit_convolve_sgemm<float, float, 128, 6, 7, 3, 3, 5, 1, false, true, '
                  'true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, '
                  'unsigned long long, int, float, float, int, float const*, float const*, bool, int, '
                  'int)',
                  72,
                  34646,
                  481.194,
                  349,
                  773,
                  3.827,
                  41.579),
                 ('void at::native::vectorized_elementwise_kernel<4, '
                  'at::native::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, '
                  'float)::{lambda(float, float)#1}, at::detail::Array<char*, 3> >(int, '
                  'at::native::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, '
                  'float)::{lambda(float, float)#1}, at::detail::Array<char*, 3>)',
                  294,
                  27301,
                  92.861,
                  13,
                  377,
                  653.164,
                  100.0),
                 ('void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, '
                  '1>(cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float '
                  'const*, float, float, float*, float*, float*, float*, float, float)',
                  150,
                  27046,
                  180.307,
                  53,
                  450,
                  3.118,
                  64.01),
                 ('volta_scudnn_128x128_stridedB_splitK_medium_nn_v1',
                  72,
                  25347,
                  352.042,
                  322,
                  631,
                  3.21,
                  25.0),
                 ('volta_sgemm_64x64_nt', 102, 21116, 207.02, 183, 279, 10.274, 19.391),
                 ('volta_scudnn_128x128_stridedB_splitK_small_nn_v1',
                  48,
                  20415,
                  425.312,
                  309,
                  674,
                  6.824,
                  25.0),
                 ('void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous '
                  'namespace)::clamp_min_scalar_kernel_impl(at::TensorIterator&, '
                  'c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#8}::operator()() '
                  'const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous '
                  'namespace)::clamp_min_scalar_kernel_impl(at::TensorIterator&, '
                  'c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#8}::operator()() '
                  'const::{lambda(float)#1}, at::detail::Array<char*, 2>)',
                  294,
                  17855,
                  60.731,
                  5,
                  252,
                  666.857,
                  100.0),
                 ('volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1',
                  36,
                  12713,
                  353.139,
                  344,
                  363,
                  22.4,
                  25.0),
                 ('volta_scudnn_128x64_stridedB_interior_nn_v1',
                  30,
                  9604,
                  320.133,
                  266,
                  513,
                  12.897,
                  19.0),
                 ('volta_sgemm_128x32_nt', 24, 8633, 359.708, 18, 479, 0.972, 11.51)]},
}
# fmt: on


def _close(ours: float, ref: float) -> bool:
    return ours == pytest.approx(ref, rel=REL, abs=0.5)


@pytest.fixture(scope="module", params=sorted(TB))
def case(request: pytest.FixtureRequest) -> tuple[dict[str, Any], Report, dict[str, Any]]:
    ref = TB[request.param]
    path = shared_trace(ref["path"])
    # cache=False: module-scoped, so the autouse XDG_CACHE_HOME fixture is not active yet
    report = build_report(stepscope.load(str(path), cache=False), top=15)
    return ref, report, report.to_json()


def test_steps(case: tuple[dict[str, Any], Report, dict[str, Any]]) -> None:
    ref, report, _ = case
    steps = report.analyses.steps
    assert [s.name for s in steps.steps] == [s[0] for s in ref["steps"]]
    assert steps.dropped == ()  # tb kept all six host steps
    for s, (_, start_us, dur_us) in zip(steps.steps, ref["steps"], strict=True):
        assert s.start == start_us * 1000
        assert s.duration == dur_us * 1000


def test_step_breakdown_per_step(case: tuple[dict[str, Any], Report, dict[str, Any]]) -> None:
    ref, report, data = case
    for ours, ref_row, js in zip(report.analyses.breakdown.steps, ref["step_breakdown"],
                                 data["steps"], strict=True):
        for cat, ref_us in zip(CATEGORIES, ref_row, strict=True):
            assert _close(ours.ns[cat] / 1000, ref_us), (ours.name, cat, ours.ns[cat], ref_us)
            assert _close(js["breakdown_us"][cat], ref_us), (js["name"], cat)
        assert sum(ours.ns.values()) == ours.duration


def test_step_breakdown_averages(case: tuple[dict[str, Any], Report, dict[str, Any]]) -> None:
    ref, _, data = case
    bd = data["breakdown"]
    assert _close(bd["step_avg_us"], ref["averages"]["total"])
    for cat in CATEGORIES:
        assert _close(bd["avg_us"][cat], ref["averages"][cat]), cat
        assert bd["pct"][cat] == pytest.approx(ref["pct"][cat], abs=PTS), cat


def test_gpu_metrics(case: tuple[dict[str, Any], Report, dict[str, Any]]) -> None:
    ref, report, data = case
    assert len(data["gpu"]) == 1
    g = data["gpu"][0]
    assert g["device"] == 0
    assert g["name"] == "Tesla V100-DGXS-32GB"
    assert g["utilization_pct"] == pytest.approx(ref["gpu_util_pct"], abs=PTS)
    assert g["sm_efficiency_pct"] == pytest.approx(ref["sm_eff_pct"], abs=PTS)
    assert g["achieved_occupancy_pct"] == pytest.approx(ref["occupancy_pct"], abs=PTS)
    assert g["tensor_core_pct"] == pytest.approx(ref["tc_pct"], abs=PTS)
    # unrounded: stepscope matches tb to 1e-3 points
    raw = report.analyses.gpu[0]
    assert raw.utilization_pct == pytest.approx(ref["gpu_util_pct"], abs=1e-3)
    assert raw.sm_efficiency_pct == pytest.approx(ref["sm_eff_pct"], abs=1e-3)
    assert raw.achieved_occupancy_pct == pytest.approx(ref["occupancy_pct"], abs=1e-3)


def test_operators(case: tuple[dict[str, Any], Report, dict[str, Any]]) -> None:
    ref, report, data = case
    assert len(report.analyses.operators) == ref["n_operators"]
    assert len(data["operators"]) == 15
    for ours, (name, calls, h_self, h_total, d_self, d_total) in zip(
            data["operators"], ref["operators"], strict=True):
        assert ours["name"] == name
        assert ours["calls"] == calls, name
        assert _close(ours["host_self_us"], h_self), name
        assert _close(ours["host_total_us"], h_total), name
        assert _close(ours["device_self_us"], d_self), name
        assert _close(ours["device_total_us"], d_total), name


def test_kernels(case: tuple[dict[str, Any], Report, dict[str, Any]]) -> None:
    ref, report, data = case
    assert len(report.analyses.kernels) == ref["n_kernels"]
    assert len(data["kernels"]) == 15
    for ours, (name, calls, total, mean, kmin, kmax, blocks, occ) in zip(
            data["kernels"], ref["kernels"], strict=True):
        assert ours["name"] == name
        assert ours["calls"] == calls, name
        assert _close(ours["total_us"], total), name
        assert _close(ours["mean_us"], mean), name
        assert _close(ours["min_us"], kmin), name
        assert _close(ours["max_us"], kmax), name
        assert ours["blocks_per_sm"] == pytest.approx(blocks, rel=REL), name
        assert ours["achieved_occupancy_pct"] == pytest.approx(occ, abs=PTS), name
        assert ours["tensor_cores"] is False  # fp32 V100 run: no Tensor Core kernels
