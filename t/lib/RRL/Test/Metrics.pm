package RRL::Test::Metrics;

# An nginx instance's /metrics, as methods of RRL::Test::Nginx (a parent
# class of it): the series by name, a zone's series by label, and the wait
# for a zone's settlements.
#
#   my ($m, $r) = $n->metrics;        # {'name{labels}' => value}, response
#   $n->zone_metrics('leases_total', $zone, 'event', qw(taken given_back));
#   RRL::Test::Metrics::zone_series('leases_total', $zone, 'event', 'taken');

use strict;
use warnings;

use Time::HiRes qw(time sleep);

# GET /metrics (or uri): { 'name{labels}' => value }, and the response
sub metrics {
    my ($self, $uri) = @_;
    my $r = $self->get($uri // '/metrics');
    my %m;
    for (split /\n/, $r->{body} // '') {
        next if /^#/;
        my ($k, $v) = /^(\S+) (\S+)$/ or next;
        $m{$k} = $v;
    }
    return (\%m, $r);
}

# zone_series($family, $zone, $label, $value): the name of a zone's series,
# redis_ratelimit_FAMILY{zone="ZONE",LABEL="VALUE"}: a key of metrics()
sub zone_series {
    my ($family, $zone, $label, $value) = @_;
    return "redis_ratelimit_${family}{zone=\"$zone\",$label=\"$value\"}";
}

# zone_metrics($family, $zone, $label, @values): those series' values now
# (one GET /metrics), undef where absent
sub zone_metrics {
    my ($self, $family, $zone, $label, @values) = @_;
    my ($m) = $self->metrics;
    return map { $m->{ zone_series($family, $zone, $label, $_) } } @values;
}

# wait_settled($zone, $total): waits (3 s at most) until the zone has
# counted $total settlements, both results; 1 if it has
sub wait_settled {
    my ($self, $zone, $total) = @_;
    my $deadline = time + 3;
    while (time < $deadline) {
        my ($s, $f) = $self->zone_metrics('settlements_total', $zone, 'result',
            qw(settled settle_failed));
        return 1 if ($s // 0) + ($f // 0) >= $total;
        sleep 0.02;
    }
    return 0;
}

1;
