package RRL::Cluster::Topology;

# What an RRL::Cluster's nodes say of the cluster, as its methods (a parent
# class of it): its nodes and their roles, the primaries' slots, CLUSTER
# SLOTS, and the wait until every node agrees (wait_ok).

use strict;
use warnings;

use Carp qw(croak);
use Time::HiRes qw(time sleep);

use RRL::Cluster::Slots qw(owner_in);

sub ports { sort { $a <=> $b } keys %{ $_[0]{nodes} } }

# seeds(@ports): "127.0.0.1:p1 127.0.0.1:p2 ..." for redis_ratelimit_server
# (the primaries by default)
sub seeds {
    my ($self, @ports) = @_;
    @ports = $self->primaries unless @ports;
    return join ' ', map { "127.0.0.1:$_" } @ports;
}

# the slot of a key as Redis computes it (CLUSTER KEYSLOT)
sub keyslot_redis {
    my ($self, $key) = @_;
    return scalar $self->cli(($self->live_ports)[0], 'CLUSTER', 'KEYSLOT', $key);
}

sub live_ports {
    my ($self) = @_;
    return grep { $self->{nodes}{$_}{pid} } $self->ports;
}

sub pid { $_[0]{nodes}{ $_[1] }{pid} }
sub plain_port { $_[0]{nodes}{ $_[1] }{plain} }
sub node_dir { $_[0]{nodes}{ $_[1] }{dir} }

# CLUSTER NODES as a node sees it: port => {id, port, flags => {..},
# master (id or '-'), slots => [[first, last], ...], role}
sub nodes_info {
    my ($self, $via) = @_;
    $via //= ($self->live_ports)[0];
    my %n;
    for my $l ($self->cli($via, 'CLUSTER', 'NODES')) {
        my ($id, $addr, $flags, $master, undef, undef, undef, undef, @slots)
            = split ' ', $l;
        next unless defined $flags && $addr =~ /:(\d+)@/;
        my $port = $1;
        my %f = map { $_ => 1 } split /,/, $flags;
        $n{$port} = {
            id => $id, port => $port, flags => \%f, master => $master,
            role => ($f{master} ? 'master' : 'slave'),
            slots => [map { /^(\d+)(?:-(\d+))?$/ ? [$1, $2 // $1] : () } @slots],
        };
    }
    return \%n;
}

sub node_id {
    my ($self, $port) = @_;
    return $self->{ids}{$port} //= $self->cli($port, 'CLUSTER', 'MYID');
}

# the primaries serving slots (as $via sees it), in slot order
sub primaries {
    my ($self, $via) = @_;
    my $n = $self->nodes_info($via);
    return map { $_->{port} }
        sort { $a->{slots}[0][0] <=> $b->{slots}[0][0] }
        grep { $_->{role} eq 'master' && !$_->{flags}{fail} && @{ $_->{slots} } }
        values %$n;
}

# replicas of a primary (ports), as $via sees it
sub replicas_of {
    my ($self, $primary, $via) = @_;
    my $n = $self->nodes_info($via);
    my $id = $n->{$primary}{id} // croak "unknown node $primary";
    my @r = sort { $a <=> $b } map { $_->{port} }
        grep { $_->{master} eq $id && !$_->{flags}{fail} } values %$n;
    return @r;
}

# slot ranges of a primary
sub slots_of {
    my ($self, $primary, $via) = @_;
    return @{ $self->nodes_info($via)->{$primary}{slots} || [] };
}

# the port serving a slot, as $via sees it (CLUSTER SLOTS)
sub slot_owner {
    my ($self, $slot, $via) = @_;
    return owner_in($self->slot_map($via), $slot);
}

# CLUSTER SLOTS as [[first, last, primary port, replica ports...], ...]
sub slot_map {
    my ($self, $via) = @_;
    $via //= ($self->live_ports)[0];
    my @l = $self->cli($via, 'CLUSTER', 'SLOTS');
    # --raw flattens: first, last, then per node: ip, port, id and (7.0)
    # an empty line for the empty metadata map
    my @map;
    my $i = 0;
    while ($i < @l) {
        last unless $l[$i] =~ /^\d+$/ && ($l[$i + 1] // '') =~ /^\d+$/;
        my @r = ($l[$i], $l[$i + 1]);
        $i += 2;
        # an address, or the hostname a node announces (7.0)
        while ($i + 2 < @l && $l[$i] =~ /^(?:\d+\.\d+\.\d+\.\d+|localhost)$/) {
            push @r, $l[$i + 1];
            $i += 3;
            # 7.0: networking metadata, a map ("ip", "hostname"), empty
            # when neither is announced
            while ($i < @l) {
                if ($l[$i] eq '') { $i++ }
                elsif ($l[$i] =~ /^(?:ip|hostname)$/) { $i += 2 }
                else { last }
            }
        }
        push @map, \@r;
    }
    return [sort { $a->[0] <=> $b->[0] } @map];
}

sub slot_map_text {
    my ($self, $via) = @_;
    return join ';', map { "$_->[0]-$_->[1]:$_->[2]("
        . join(',', sort @$_[3 .. $#$_]) . ')' } @{ $self->slot_map($via) };
}

# wait_ok($timeout, replicas => 1): every live node says cluster_state:ok
# and shows the same slot map (covering 16384 slots), and every replica's
# link is up; with replicas => 1 (the default) each primary has its
# replicas in that map
sub wait_ok {
    my ($self, $timeout, %o) = @_;
    my $want_replicas = $o{replicas} // 1;
    my $deadline = time + ($timeout // 10);
    while (time < $deadline) {
        my $ok = 1;
        my %maps;
        for my $p ($self->live_ports) {
            my $info = $self->cli($p, 'CLUSTER', 'INFO');
            if ($info !~ /cluster_state:ok/ || $info !~ /cluster_slots_ok:16384/) {
                $ok = 0;
                last;
            }
            $maps{ $self->slot_map_text($p) }++;
        }
        if ($ok && keys %maps == 1) {
            my $map = $self->slot_map;
            my $slots = 0;
            $slots += $_->[1] - $_->[0] + 1 for @$map;
            $ok = 0 if $slots != 16384;
            if ($ok && $want_replicas) {
                for my $r (@$map) {
                    $ok = 0 if @$r - 3 < $self->{nreplicas};
                    for my $rep (@$r[3 .. $#$r]) {
                        my $i = $self->cli($rep, 'INFO', 'replication');
                        $ok = 0 unless $i =~ /master_link_status:up/;
                    }
                }
            }
            return 1 if $ok;
        }
        sleep 0.05;
    }
    return 0;
}

1;
